import { timestampDate } from '@bufbuild/protobuf/wkt';
import { DocketError, invalidField, isDocketError, isValidId } from '@docket/contracts';
import { ScheduleOverlap, ScheduleState, type Schedule } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { HandleScheduleCallRequest } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { durationMs, validateJobSpecMessage } from '@docket/service-kit';
import type { Viewer } from '../db/queries/jobs.js';
import type { ScheduleListPosition } from '../db/queries/schedules.js';
import type { ScheduleOverlapName } from '../db/tables/index.js';
import type { IdempotentRequest } from '../admission/idempotent-mutation.js';
import { parseCronTrigger, parseIntervalTrigger } from '../schedules/schedule-trigger.js';
import type { NewSchedule, ScheduleChange } from '../schedules/schedules.js';
import { parseIdempotentRequest, viewerOf } from './state-requests.js';

/** One schedule call, checked. */
export type ScheduleCall =
  | { readonly case: 'create'; readonly request: IdempotentRequest; readonly schedule: NewSchedule }
  | { readonly case: 'get'; readonly viewer: Viewer; readonly scheduleId: string }
  | { readonly case: 'list'; readonly viewer: Viewer; readonly pageSize: number; readonly after: ScheduleListPosition | undefined }
  | { readonly case: 'change'; readonly request: IdempotentRequest; readonly viewer: Viewer; readonly scheduleId: string; readonly change: ScheduleChange };

/** The catch-up window when a schedule names none: one hour. */
export const DEFAULT_CATCH_UP_WINDOW_MS = 3_600_000;

/** The catch-up window's bounds: 1 second to 7 days (the table's check). */
export const CATCH_UP_WINDOW_BOUNDS_MS = { min: 1_000, max: 7 * 86_400_000 } as const;

/**
 * A HandleScheduleCall, checked: the binding of a mutation (key, digest,
 * TTL), the schedule id's shape, and for CreateSchedule the whole schedule
 * ({@link parseNewSchedule}). Anything wrong is INVALID_ARGUMENT and
 * nothing is written.
 */
export function parseScheduleCall(request: HandleScheduleCallRequest, now: Date = new Date()): ScheduleCall {
  const call = request.request;
  switch (call.case) {
    case 'createSchedule':
      if (!call.value.schedule) throw invalidField('schedule', 'is required');
      return { case: 'create', request: parseIdempotentRequest(request), schedule: parseNewSchedule(call.value.schedule, now) };
    case 'getSchedule':
      return { case: 'get', viewer: viewerOf(request.caller), scheduleId: parseScheduleId(call.value.scheduleId) };
    case 'listSchedules': {
      const { pageSize, after } = call.value;
      if (pageSize < 1 || pageSize > 200) throw invalidField('page_size', 'must be between 1 and 200');
      if (after && (!after.createTime || !isValidId(after.scheduleId))) throw invalidField('after', 'must name a creation time and a schedule id');
      return {
        case: 'list',
        viewer: viewerOf(request.caller),
        pageSize,
        after: after?.createTime ? { createdAt: timestampDate(after.createTime), scheduleId: after.scheduleId } : undefined,
      };
    }
    case 'pauseSchedule':
    case 'resumeSchedule':
    case 'deleteSchedule': {
      const change: ScheduleChange = call.case === 'pauseSchedule' ? 'PAUSE' : call.case === 'resumeSchedule' ? 'RESUME' : 'DELETE';
      return {
        case: 'change',
        request: parseIdempotentRequest(request),
        viewer: viewerOf(request.caller),
        scheduleId: parseScheduleId(call.value.scheduleId),
        change,
      };
    }
    default:
      throw invalidField('request', 'must be a schedule call');
  }
}

/** A schedule id's shape; a well-formed id that is not visible is NOT_FOUND later. */
export function parseScheduleId(scheduleId: string): string {
  if (!isValidId(scheduleId)) throw invalidField('schedule_id', 'must be a Docket id');
  return scheduleId;
}

/**
 * A CreateSchedule's schedule, checked field by field (paths as the public
 * request names them, under `schedule.`): an optional id of the id shape;
 * exactly one trigger, a 5-field cron with a valid IANA time zone or an
 * interval of 1 s to 366 days (no time zone); a template that SubmitJob
 * would accept, with no idempotency key and no run_after; a known overlap
 * policy (default SKIP); a catch-up window of 1 s to 7 days (default one
 * hour); state ACTIVE or PAUSED. Output-only fields are ignored.
 */
export function parseNewSchedule(schedule: Schedule, now: Date): NewSchedule {
  if (schedule.scheduleId !== '' && !isValidId(schedule.scheduleId)) {
    throw invalidField('schedule.schedule_id', 'must match ^[A-Za-z0-9][A-Za-z0-9_-]{7,127}$, or be empty for a fresh id');
  }
  const trigger = parseTrigger(schedule, now);
  const template = schedule.jobTemplate;
  if (!template) throw invalidField('schedule.job_template', 'is required');
  if (template.idempotencyKey !== '') {
    throw invalidField('schedule.job_template.idempotency_key', 'must be empty: each firing derives its key from the schedule and the tick');
  }
  if (template.runAfter) throw invalidField('schedule.job_template.run_after', 'must be unset: each firing is due at its tick');
  try {
    validateJobSpecMessage(template);
  } catch (error) {
    throw underTemplate(error);
  }
  const catchUpWindowMs = durationMs(schedule.catchUpWindow) ?? DEFAULT_CATCH_UP_WINDOW_MS;
  if (!Number.isInteger(catchUpWindowMs) || catchUpWindowMs < CATCH_UP_WINDOW_BOUNDS_MS.min || catchUpWindowMs > CATCH_UP_WINDOW_BOUNDS_MS.max) {
    throw invalidField('schedule.catch_up_window', 'must be whole milliseconds, from 1 second to 7 days');
  }
  if (schedule.state !== ScheduleState.UNSPECIFIED && schedule.state !== ScheduleState.ACTIVE && schedule.state !== ScheduleState.PAUSED) {
    throw invalidField('schedule.state', 'must be ACTIVE or PAUSED');
  }
  return {
    scheduleId: schedule.scheduleId === '' ? undefined : schedule.scheduleId,
    trigger,
    template,
    overlap: parseOverlap(schedule.overlap),
    catchUpWindowMs,
    paused: schedule.state === ScheduleState.PAUSED,
  };
}

function parseTrigger(schedule: Schedule, now: Date) {
  switch (schedule.trigger.case) {
    case 'cron':
      return parseCronTrigger(schedule.trigger.value, schedule.timeZone, now);
    case 'interval':
      if (schedule.timeZone !== '') throw invalidField('schedule.time_zone', 'must be empty for an interval schedule');
      return parseIntervalTrigger(durationMs(schedule.trigger.value));
    default:
      throw invalidField('schedule.cron', 'one of cron or interval is required');
  }
}

function parseOverlap(overlap: ScheduleOverlap): ScheduleOverlapName {
  switch (overlap) {
    case ScheduleOverlap.UNSPECIFIED:
    case ScheduleOverlap.SKIP:
      return 'SKIP';
    case ScheduleOverlap.BUFFER_ONE:
      return 'BUFFER_ONE';
    case ScheduleOverlap.ALLOW:
      return 'ALLOW';
    default:
      throw invalidField('schedule.overlap', 'must be SKIP, BUFFER_ONE or ALLOW');
  }
}

/** A template's refusal with its field paths under `schedule.job_template.`. */
function underTemplate(error: unknown): unknown {
  if (!isDocketError(error)) return error;
  return new DocketError(error.reason, 'the job template is invalid', {
    metadata: { ...error.metadata },
    fieldViolations: error.fieldViolations.map((violation) => ({ ...violation, field: `schedule.job_template.${violation.field}` })),
  });
}

import { create, fromBinary, toBinary, type MessageShape } from '@bufbuild/protobuf';
import { durationFromMs, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Kysely } from 'kysely';
import { DocketError, newId, notFound } from '@docket/contracts';
import {
  ScheduleOverlap,
  ScheduleSchema,
  ScheduleState,
  SubmitJobRequestSchema,
  type Schedule,
  type SubmitJobRequest,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { Viewer } from '../db/queries/jobs.js';
import {
  findVisibleSchedule,
  insertSchedule,
  listVisibleSchedules,
  lockVisibleSchedule,
  updateSchedule,
  type ScheduleListPosition,
  type SchedulePatch,
  type ScheduleRow,
} from '../db/queries/schedules.js';
import type { Database, ScheduleOverlapName } from '../db/tables/index.js';
import { storeIdempotently, type IdempotentRequest, type StoredOutcome } from '../admission/idempotent-mutation.js';
import { nextTickAfter, type ScheduleTrigger } from './schedule-trigger.js';

/** A CreateSchedule, checked (see `parseScheduleCall`). */
export interface NewSchedule {
  /** The caller's chosen id; undefined asks for a fresh `sch_` id. */
  readonly scheduleId: string | undefined;
  readonly trigger: ScheduleTrigger;
  /** The SubmitJobRequest each firing admits, already validated. */
  readonly template: SubmitJobRequest;
  readonly overlap: ScheduleOverlapName;
  readonly catchUpWindowMs: number;
  readonly paused: boolean;
}

/** A change of an existing schedule. */
export type ScheduleChange = 'PAUSE' | 'RESUME' | 'DELETE';

/** A decided schedule mutation: the stored schedule, replayed or not. */
export type ScheduleOutcome = StoredOutcome<typeof ScheduleSchema>;

/**
 * CreateSchedule with SubmitJob's idempotency contract: the binding, the
 * schedule row and the stored response commit in one transaction. The
 * first tick is the first one strictly after the creation (database
 * clock). A chosen id that is already taken (by any owner, or by a deleted
 * schedule) is ALREADY_EXISTS (reason IDEMPOTENCY_CONFLICT: the id is a
 * creation key bound to another request) and writes nothing.
 */
export async function createSchedule(db: Kysely<Database>, request: IdempotentRequest, schedule: NewSchedule): Promise<ScheduleOutcome> {
  return storeIdempotently(db, request, ScheduleSchema, async (tx, now) => {
    const id = schedule.scheduleId ?? newId('sch');
    const row = {
      id,
      owner: request.subject,
      cron: schedule.trigger.kind === 'cron' ? schedule.trigger.expression : null,
      time_zone: schedule.trigger.kind === 'cron' ? schedule.trigger.timeZone : '',
      interval_ms: schedule.trigger.kind === 'interval' ? BigInt(schedule.trigger.intervalMs) : null,
      job_template: Buffer.from(toBinary(SubmitJobRequestSchema, schedule.template)),
      overlap: schedule.overlap,
      catch_up_window_ms: BigInt(schedule.catchUpWindowMs),
      state: schedule.paused ? ('PAUSED' as const) : ('ACTIVE' as const),
      revision: 1n,
      next_fire_at: schedule.paused ? null : nextTickAfter(schedule.trigger, now),
      fired_count: 0n,
      missed_count: 0n,
      overlap_skipped_count: 0n,
      created_at: now,
      updated_at: now,
    };
    if (!(await insertSchedule(tx, row))) {
      throw new DocketError('IDEMPOTENCY_CONFLICT', 'the schedule id is already taken', {
        fieldViolations: [{ field: 'schedule.schedule_id', description: 'is already taken; omit it for a fresh id' }],
      });
    }
    const stored = await findVisibleSchedule(tx, { subject: request.subject, admin: false }, id);
    if (!stored) throw new DocketError('INTERNAL', 'the schedule was not stored');
    return { value: projectSchedule(stored), jobId: null };
  });
}

/**
 * PauseSchedule, ResumeSchedule or DeleteSchedule, idempotent by key like
 * CreateSchedule, under the schedule row's lock (a firing in progress
 * finishes first). Pause clears the next tick and any held BUFFER_ONE
 * tick; resume sets the next tick to the first one strictly after the
 * resume, so ticks that fell due while paused are not caught up; pausing a
 * paused or resuming an active schedule changes nothing. Delete marks the
 * row DELETED (it then reads as NOT_FOUND and its id is never reused) and
 * answers the schedule as it stood. Another owner's schedule is NOT_FOUND.
 */
export async function changeSchedule(db: Kysely<Database>, request: IdempotentRequest, viewer: Viewer, scheduleId: string, change: ScheduleChange): Promise<ScheduleOutcome> {
  return storeIdempotently(db, request, ScheduleSchema, async (tx, now) => {
    const row = await lockVisibleSchedule(tx, viewer, scheduleId);
    if (!row) throw notFound('schedule');
    const patch = schedulePatch(row, change, now);
    if (!patch) return { value: projectSchedule(row), jobId: null };
    const changed = await updateSchedule(tx, row.id, { ...patch, revision: row.revision + 1n, updated_at: now });
    return { value: projectSchedule(change === 'DELETE' ? row : changed), jobId: null };
  });
}

/** The columns a change sets, or undefined when it changes nothing. */
function schedulePatch(row: ScheduleRow, change: ScheduleChange, now: Date): SchedulePatch | undefined {
  switch (change) {
    case 'PAUSE':
      return row.state === 'PAUSED' ? undefined : { state: 'PAUSED', next_fire_at: null, buffered_fire_at: null };
    case 'RESUME':
      return row.state === 'ACTIVE' ? undefined : { state: 'ACTIVE', next_fire_at: nextTickAfter(triggerOf(row), now) };
    case 'DELETE':
      return { state: 'DELETED', next_fire_at: null, buffered_fire_at: null };
  }
}

/** GetSchedule: a schedule the viewer may see, else NOT_FOUND. */
export async function getSchedule(db: Kysely<Database>, viewer: Viewer, scheduleId: string): Promise<Schedule> {
  const row = await findVisibleSchedule(db, viewer, scheduleId);
  if (!row) throw notFound('schedule');
  return projectSchedule(row);
}

/** ListSchedules: one page, newest first, and whether more follow. */
export async function listSchedules(
  db: Kysely<Database>,
  viewer: Viewer,
  after: ScheduleListPosition | undefined,
  pageSize: number,
): Promise<{ readonly schedules: Schedule[]; readonly hasMore: boolean }> {
  const rows = await listVisibleSchedules(db, viewer, after, pageSize + 1);
  return { schedules: rows.slice(0, pageSize).map(projectSchedule), hasMore: rows.length > pageSize };
}

/** A stored schedule's trigger. */
export function triggerOf(row: ScheduleRow): ScheduleTrigger {
  if (row.cron !== null) return { kind: 'cron', expression: row.cron, timeZone: row.time_zone };
  return { kind: 'interval', intervalMs: Number(row.interval_ms) };
}

/** A stored schedule's job template. */
export function templateOf(row: ScheduleRow): SubmitJobRequest {
  return fromBinary(SubmitJobRequestSchema, row.job_template);
}

/** The public projection of a schedule row. */
export function projectSchedule(row: ScheduleRow): MessageShape<typeof ScheduleSchema> {
  const trigger = triggerOf(row);
  const time = (at: Date | null) => (at ? timestampFromDate(at) : undefined);
  return create(ScheduleSchema, {
    scheduleId: row.id,
    trigger: trigger.kind === 'cron' ? { case: 'cron', value: trigger.expression } : { case: 'interval', value: durationFromMs(trigger.intervalMs) },
    timeZone: row.time_zone,
    jobTemplate: templateOf(row),
    overlap: ScheduleOverlap[row.overlap],
    catchUpWindow: durationFromMs(Number(row.catch_up_window_ms)),
    state: row.state === 'PAUSED' ? ScheduleState.PAUSED : ScheduleState.ACTIVE,
    owner: row.owner,
    createTime: timestampFromDate(row.created_at),
    updateTime: timestampFromDate(row.updated_at),
    nextFireTime: time(row.next_fire_at),
    lastFireTime: time(row.last_fire_at),
    lastJobId: row.last_job_id ?? '',
    lastFiredAt: time(row.last_fired_at),
    bufferedFireTime: time(row.buffered_fire_at),
    firedCount: row.fired_count,
    missedCount: row.missed_count,
    lastMissedFireTime: time(row.last_missed_fire_at),
    overlapSkippedCount: row.overlap_skipped_count,
    revision: row.revision,
  });
}

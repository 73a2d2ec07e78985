import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { coerceListPageSize, invalidField, isValidId } from '@docket/contracts';
import type { Principal } from '@docket/auth';
import {
  CreateScheduleRequestSchema,
  DeleteScheduleRequestSchema,
  ListSchedulesResponseSchema,
  PauseScheduleRequestSchema,
  ResumeScheduleRequestSchema,
  type GetScheduleResponse,
  type ListSchedulesRequest,
  type ListSchedulesResponse,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { HandleScheduleCallRequest, HandleScheduleCallResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { callerOf, type ForwardedDeadline } from '@docket/service-kit';
import type { AdmissionDependencies } from './admission.js';
import { answerOfCase, idempotentCalls } from './state-call.js';

/** A schedule call that changes something, as HandleScheduleCall carries it. */
type ScheduleMutation = Extract<HandleScheduleCallRequest['request'], { case: 'createSchedule' | 'pauseSchedule' | 'resumeSchedule' | 'deleteSchedule' }>;

/** What a ListSchedules page token is bound to besides the subject (a ListJobs token never opens here). */
const SCHEDULE_LIST_BINDING = { list: 'schedules' } as const;

/**
 * CreateSchedule, PauseSchedule, ResumeSchedule and DeleteSchedule: the
 * key (and the schedule id) are checked here and the request digested
 * exactly as SubmitJob's (the same idempotency contract); the state
 * service validates the schedule and decides in one transaction with the
 * binding and the stored response.
 */
export const mutateSchedule = idempotentCalls<ScheduleMutation, HandleScheduleCallResponse['response']>({
  rpcs: {
    createSchedule: { schema: CreateScheduleRequestSchema, operation: 'docket.admission.v1.AdmissionService/CreateSchedule' },
    pauseSchedule: { schema: PauseScheduleRequestSchema, operation: 'docket.admission.v1.AdmissionService/PauseSchedule' },
    resumeSchedule: { schema: ResumeScheduleRequestSchema, operation: 'docket.admission.v1.AdmissionService/ResumeSchedule' },
    deleteSchedule: { schema: DeleteScheduleRequestSchema, operation: 'docket.admission.v1.AdmissionService/DeleteSchedule' },
  },
  check: (call) => {
    if (call.case === 'createSchedule') {
      if (!call.value.schedule) throw invalidField('schedule', 'is required');
    } else if (!isValidId(call.value.scheduleId)) {
      throw invalidField('schedule_id', 'must be a Docket id');
    }
  },
  send: (deps, request, call) => deps.state.handleScheduleCall(request, call),
});

/** GetSchedule: one of the caller's schedules (any, for an admin); others are NOT_FOUND. */
export async function getSchedule(deps: AdmissionDependencies, principal: Principal, scheduleId: string, call: ForwardedDeadline): Promise<GetScheduleResponse> {
  if (!isValidId(scheduleId)) throw invalidField('schedule_id', 'must be a Docket id');
  const answer = await deps.state.handleScheduleCall(
    { caller: callerOf(principal), request: { case: 'getSchedule', value: { scheduleId } } },
    call,
  );
  return answerOfCase(answer.response, 'getSchedule');
}

/**
 * ListSchedules: one page of the caller's schedules (all, for an admin),
 * newest first, keyset-paged; the page token is HMAC-sealed and bound to
 * the subject (the ListJobs token codec, under its own binding).
 */
export async function listSchedules(deps: AdmissionDependencies, principal: Principal, request: ListSchedulesRequest, call: ForwardedDeadline): Promise<ListSchedulesResponse> {
  const pageSize = coerceListPageSize(request.pageSize);
  const binding = { subject: principal.subject, filter: SCHEDULE_LIST_BINDING };
  const position = request.pageToken === '' ? undefined : deps.pageTokens.open(request.pageToken, binding);
  const answer = await deps.state.handleScheduleCall(
    {
      caller: callerOf(principal),
      request: {
        case: 'listSchedules',
        value: { pageSize, after: position ? { createTime: timestampFromDate(position.createdAt), scheduleId: position.jobId } : undefined },
      },
    },
    call,
  );
  const page = answerOfCase(answer.response, 'listSchedules');
  const last = page.schedules.at(-1);
  const nextPageToken = deps.pageTokens.nextAfter(answer.hasMore, last && { at: last.createTime, id: last.scheduleId }, binding);
  return create(ListSchedulesResponseSchema, { schedules: page.schedules, nextPageToken });
}

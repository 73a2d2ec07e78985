import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { coerceListPageSize, invalidField, isValidId, parseIdempotencyKey } from '@docket/contracts';
import type { Principal } from '@docket/auth';
import {
  CreateScheduleRequestSchema,
  DeleteScheduleRequestSchema,
  ListSchedulesResponseSchema,
  PauseScheduleRequestSchema,
  ResumeScheduleRequestSchema,
  type CreateScheduleRequest,
  type GetScheduleResponse,
  type ListSchedulesRequest,
  type ListSchedulesResponse,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { HandleScheduleCallRequest, HandleScheduleCallResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { callerOf, type ForwardedDeadline } from '@docket/service-kit';
import type { AdmissionDependencies } from './admission.js';
import { answerOfCase, idempotentBinding, type IdempotentRpc } from './state-call.js';

/** A schedule call as HandleScheduleCall carries it. */
type ScheduleCall = Exclude<HandleScheduleCallRequest['request'], { case: undefined }>;
/** The public response of schedule call `C`. */
type ScheduleCallResponse<C extends ScheduleCall['case']> = Extract<HandleScheduleCallResponse['response'], { case: C }>['value'];

/** The schedule RPCs that change something: their request schemas and RPC paths (the idempotency scope). */
const SCHEDULE_MUTATIONS = {
  createSchedule: { schema: CreateScheduleRequestSchema, operation: 'docket.admission.v1.AdmissionService/CreateSchedule' },
  pauseSchedule: { schema: PauseScheduleRequestSchema, operation: 'docket.admission.v1.AdmissionService/PauseSchedule' },
  resumeSchedule: { schema: ResumeScheduleRequestSchema, operation: 'docket.admission.v1.AdmissionService/ResumeSchedule' },
  deleteSchedule: { schema: DeleteScheduleRequestSchema, operation: 'docket.admission.v1.AdmissionService/DeleteSchedule' },
} as const satisfies Record<string, IdempotentRpc>;

/** The name of a schedule mutation. */
type ScheduleMutation = keyof typeof SCHEDULE_MUTATIONS;

/** What a ListSchedules page token is bound to besides the subject (a ListJobs token never opens here). */
const SCHEDULE_LIST_BINDING = { list: 'schedules' } as const;

/**
 * CreateSchedule, PauseSchedule, ResumeSchedule and DeleteSchedule: the
 * key (and the schedule id) are checked here and the request digested
 * exactly as SubmitJob's (the same idempotency contract); the state
 * service validates the schedule and decides in one transaction with the
 * binding and the stored response.
 */
export async function mutateSchedule<C extends ScheduleMutation>(
  deps: AdmissionDependencies,
  principal: Principal,
  name: C,
  request: Extract<ScheduleCall, { case: C }>['value'],
  call: ForwardedDeadline,
): Promise<ScheduleCallResponse<C>> {
  parseIdempotencyKey(request.idempotencyKey);
  if (name === 'createSchedule') {
    if (!(request as CreateScheduleRequest).schedule) throw invalidField('schedule', 'is required');
  } else if (!isValidId((request as { scheduleId: string }).scheduleId)) {
    throw invalidField('schedule_id', 'must be a Docket id');
  }
  const rpc = SCHEDULE_MUTATIONS[name];
  const answer = await deps.state.handleScheduleCall({ ...idempotentBinding(deps, principal, rpc, request), request: { case: name, value: request } as ScheduleCall }, call);
  return answerOfCase(answer.response, name) as ScheduleCallResponse<C>;
}

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

import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Kysely } from 'kysely';
import { HandleScheduleCallResponseSchema, type HandleScheduleCallRequest, type HandleScheduleCallResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { Database } from '../db/tables/index.js';
import { changeSchedule, createSchedule, getSchedule, listSchedules, type ScheduleOutcome } from '../schedules/schedules.js';
import { parseScheduleCall } from './schedule-requests.js';

/**
 * HandleScheduleCall: checks the call, lets the schedules domain decide it
 * and answers the public response of the RPC it carries (a mutation's
 * stored original on replay, with `replayed` set).
 */
export async function answerScheduleCall(db: Kysely<Database>, request: HandleScheduleCallRequest): Promise<HandleScheduleCallResponse> {
  const call = parseScheduleCall(request);
  switch (call.case) {
    case 'create': {
      const outcome = await createSchedule(db, call.request, call.schedule);
      return create(HandleScheduleCallResponseSchema, { response: { case: 'createSchedule', value: mutationResponse(outcome) } });
    }
    case 'get': {
      const schedule = await getSchedule(db, call.viewer, call.scheduleId);
      return create(HandleScheduleCallResponseSchema, { response: { case: 'getSchedule', value: { schedule } } });
    }
    case 'list': {
      const page = await listSchedules(db, call.viewer, call.after, call.pageSize);
      return create(HandleScheduleCallResponseSchema, { response: { case: 'listSchedules', value: { schedules: page.schedules } }, hasMore: page.hasMore });
    }
    case 'change': {
      const outcome = await changeSchedule(db, call.request, call.viewer, call.scheduleId, call.change);
      const value = mutationResponse(outcome);
      const response =
        call.change === 'PAUSE'
          ? ({ case: 'pauseSchedule', value } as const)
          : call.change === 'RESUME'
            ? ({ case: 'resumeSchedule', value } as const)
            : ({ case: 'deleteSchedule', value } as const);
      return create(HandleScheduleCallResponseSchema, { response });
    }
  }
}

/** The fields every schedule mutation's response shares. */
function mutationResponse(outcome: ScheduleOutcome) {
  return { schedule: outcome.value, replayed: outcome.replayed, idempotencyExpiresAt: timestampFromDate(outcome.idempotencyExpiresAt) };
}

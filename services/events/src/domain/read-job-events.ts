import { create } from '@bufbuild/protobuf';
import type { Principal } from '@docket/auth';
import { coerceEventPageSize } from '@docket/contracts';
import {
  ReadJobEventsResponseSchema,
  type ReadJobEventsRequest,
  type ReadJobEventsResponse,
} from '@docket/proto/docket/events/v1/event_service_pb.js';
import type { ForwardedDeadline } from '@docket/service-kit';
import { callerOf } from '@docket/service-kit';
import type { EventDependencies } from './event-dependencies.js';
import { parseJobPosition } from './job-position.js';

/**
 * One verified page of a job's journal after a sequence. The page size is
 * coerced per AIP-158 (0 -> 100, above 256 -> 256, negative refused); the
 * state service verifies the chain and answers NOT_FOUND, OUT_OF_RANGE
 * (CURSOR_BEYOND_LATEST) or DATA_LOSS (JOURNAL_CORRUPT), passed on as they are.
 */
export async function readJobEvents(
  deps: EventDependencies,
  principal: Principal,
  request: ReadJobEventsRequest,
  call: ForwardedDeadline,
): Promise<ReadJobEventsResponse> {
  const position = parseJobPosition(request.jobId, request.afterSequence);
  const pageSize = coerceEventPageSize(request.pageSize);
  const page = await deps.state.readJobEvents(
    { caller: callerOf(principal), jobId: position.jobId, afterSequence: position.afterSequence, pageSize },
    call,
  );
  return create(ReadJobEventsResponseSchema, {
    events: page.events,
    latestSequence: page.latestSequence,
    requestDigest: page.requestDigest,
  });
}

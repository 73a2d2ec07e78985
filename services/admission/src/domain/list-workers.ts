import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Principal } from '@docket/auth';
import { coerceListPageSize, invalidField, isValidQueueName } from '@docket/contracts';
import { ListWorkersResponseSchema, type ListWorkersRequest, type ListWorkersResponse } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { callerOf, type ForwardedDeadline } from '@docket/service-kit';
import type { AdmissionDependencies } from './admission.js';
import { requireAdmin } from './lifecycle-admin.js';

/**
 * ListWorkers: admins only; one page of worker incarnations, newest
 * registration first, keyset-paged. The page token is HMAC-sealed and bound
 * to the subject and the queue filter (the ListJobs token codec, under its
 * own binding, so no other listing's token opens here).
 */
export async function listWorkers(deps: AdmissionDependencies, principal: Principal, request: ListWorkersRequest, call: ForwardedDeadline): Promise<ListWorkersResponse> {
  requireAdmin(principal);
  const pageSize = coerceListPageSize(request.pageSize);
  if (request.queue !== '' && !isValidQueueName(request.queue)) throw invalidField('queue', 'must match ^[a-z0-9][a-z0-9._-]{0,127}$');
  const binding = { subject: principal.subject, filter: { list: 'workers', queue: request.queue } };
  const position = request.pageToken === '' ? undefined : deps.pageTokens.open(request.pageToken, binding);
  const page = await deps.state.listWorkers(
    {
      caller: callerOf(principal),
      queue: request.queue,
      pageSize,
      after: position ? { registeredAt: timestampFromDate(position.createdAt), workerIncarnation: position.jobId } : undefined,
    },
    call,
  );
  const last = page.workers.at(-1);
  const nextPageToken = deps.pageTokens.nextAfter(page.hasMore, last && { at: last.registeredAt, id: last.workerIncarnation }, binding);
  return create(ListWorkersResponseSchema, { workers: page.workers, nextPageToken });
}

import { create } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Kysely } from 'kysely';
import { coerceListPageSize, invalidField, isIdOf, isValidQueueName } from '@docket/contracts';
import { WorkerSchema, WorkerState, type Worker } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { ListWorkersRequest } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { listWorkerIncarnations, type WorkerListingRow } from '../db/queries/workers.js';
import type { Database } from '../db/tables/index.js';

/** ListWorkers: one keyset page of worker incarnations, newest registration first, and whether more follow. */
export async function listWorkers(db: Kysely<Database>, request: ListWorkersRequest, leaseMs: number): Promise<{ workers: Worker[]; hasMore: boolean }> {
  if (request.queue !== '' && !isValidQueueName(request.queue)) throw invalidField('queue', 'must match ^[a-z0-9][a-z0-9._-]{0,127}$');
  const after = request.after;
  if (after && (!after.registeredAt || !isIdOf('wkr', after.workerIncarnation))) throw invalidField('after', 'must name a registration time and an incarnation');
  const pageSize = coerceListPageSize(request.pageSize);
  const rows = await listWorkerIncarnations(db, {
    queue: request.queue,
    after: after?.registeredAt ? { registeredAt: timestampDate(after.registeredAt), id: after.workerIncarnation } : undefined,
    limit: pageSize + 1,
    leaseMs,
  });
  return { workers: rows.slice(0, pageSize).map(projectWorker), hasMore: rows.length > pageSize };
}

function projectWorker(row: WorkerListingRow): Worker {
  return create(WorkerSchema, {
    workerName: row.name,
    workerIncarnation: row.id,
    generation: row.generation,
    queues: row.queues,
    maxConcurrency: row.max_concurrency,
    runningAttempts: row.running_attempts,
    registeredAt: timestampFromDate(row.registered_at),
    lastSeenAt: timestampFromDate(row.last_seen_at),
    state: WorkerState[row.state],
    subject: row.subject,
  });
}

import { create } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import type { Kysely } from 'kysely';
import { invalidField, isValidQueueName, newId } from '@docket/contracts';
import {
  RegisterWorkerResponseSchema,
  type RegisterWorkerRequest,
  type RegisterWorkerResponse,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { lockJobsHeldBy } from '../db/queries/claims.js';
import { transactionNow } from '../db/queries/clock.js';
import { insertIncarnation, nextWorkerGeneration, supersedeIncarnations } from '../db/queries/workers.js';
import type { Database } from '../db/tables/index.js';
import { settleLostAttempt } from '../attempts/settle-lost-attempt.js';

const WORKER_NAME = /^[A-Za-z0-9._:-]{1,128}$/;
const MAX_QUEUES = 32;

/** The settings registration needs. */
export interface ExecutionSettings {
  readonly leaseMs: number;
}

/**
 * Registers a new incarnation of (subject, worker name): the name's
 * generation grows by one (persisted), every earlier incarnation is
 * superseded, and every job they still hold is settled as lost, all in one
 * transaction. The name's row lock serialises registrations; a claim by a
 * superseded incarnation either committed before (and is settled here) or
 * finds it superseded (STALE_INCARNATION), so settlement never touches an
 * attempt claimed after it.
 */
export async function registerWorker(
  db: Kysely<Database>,
  settings: ExecutionSettings,
  subject: string,
  request: RegisterWorkerRequest,
): Promise<RegisterWorkerResponse> {
  if (!WORKER_NAME.test(request.workerName)) throw invalidField('worker_name', 'must be 1 to 128 characters of [A-Za-z0-9._:-]');
  if (request.queues.length === 0 || request.queues.length > MAX_QUEUES) {
    throw invalidField('queues', `must name 1 to ${MAX_QUEUES} queues`);
  }
  request.queues.forEach((queue, index) => {
    if (!isValidQueueName(queue)) throw invalidField(`queues[${index}]`, 'must be a queue name');
  });
  const maxConcurrency = request.maxConcurrency === 0 ? 1 : request.maxConcurrency;
  if (maxConcurrency < 1 || maxConcurrency > 1000) throw invalidField('max_concurrency', 'must be between 1 and 1000');
  return db.transaction().execute(async (tx) => {
    const now = await transactionNow(tx);
    const generation = await nextWorkerGeneration(tx, subject, request.workerName);
    const superseded = await supersedeIncarnations(tx, subject, request.workerName, now);
    const id = newId('wkr');
    await insertIncarnation(tx, {
      id,
      subject,
      name: request.workerName,
      generation,
      queues: [...new Set(request.queues)],
      max_concurrency: maxConcurrency,
      registered_at: now,
      superseded_at: null,
      last_seen_at: now,
    });
    for (const job of await lockJobsHeldBy(tx, superseded)) await settleLostAttempt(tx, job, 'superseded', now);
    return create(RegisterWorkerResponseSchema, {
      workerIncarnation: id,
      generation,
      leaseDuration: durationFromMs(settings.leaseMs),
    });
  });
}

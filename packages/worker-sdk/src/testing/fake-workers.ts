import { createWorker, type Worker } from '../create-worker.js';
import type { JobHandler } from '../job-context.js';
import type { WorkerOptions } from '../worker-options.js';
import type { FakeExecution } from './fake-execution.js';

/** Workers {@link startWorker} created and {@link stopWorkers} has not stopped yet. */
const created: Worker[] = [];

/**
 * A worker against the in-memory execution service `fake`, running
 * `handler`: named `unit`, on queue `default`, two jobs at a time, each
 * claim waiting at most 200 ms, unless `options` say otherwise. It is
 * created, not started: the test calls `start()`, and {@link stopWorkers}
 * stops it.
 */
export function startWorker(fake: FakeExecution, handler: JobHandler, options: Partial<WorkerOptions> = {}): Worker {
  const worker = createWorker({ transport: fake.transport(), name: 'unit', queues: ['default'], concurrency: 2, claimWaitMs: 200, handler, ...options });
  created.push(worker);
  return worker;
}

/** Stops every worker {@link startWorker} created; meant for `afterEach`. */
export async function stopWorkers(): Promise<void> {
  await Promise.all(created.splice(0).map((worker) => worker.stop()));
}

import { createWorker, type Worker, type WorkerOptions } from '@docket/worker-sdk';

/** Workers {@link startSdkWorker} started and {@link stopSdkWorkers} has not stopped yet. */
const started: Worker[] = [];

/**
 * Creates a worker-SDK worker with `options` against a real execution
 * service and starts it; {@link stopSdkWorkers} stops it after the test.
 */
export async function startSdkWorker(options: WorkerOptions): Promise<Worker> {
  const worker = createWorker(options);
  started.push(worker);
  await worker.start();
  return worker;
}

/** Stops every worker {@link startSdkWorker} started; meant for `afterEach`. */
export async function stopSdkWorkers(): Promise<void> {
  await Promise.all(started.splice(0).map((worker) => worker.stop()));
}

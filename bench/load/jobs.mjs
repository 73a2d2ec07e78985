// What every system is asked to store: the same small JSON input for each
// job, keyed by a unique idempotency key, and how claim loops are laid out.

/** The input of job `index`: about 120 bytes of JSON, identical for every system. */
export const jobInput = (index) => ({ index, note: 'x'.repeat(100) });

/** A unique idempotency key for job `index` of a run whose keys start with `prefix`. */
export const jobKey = (prefix, index) => `${prefix}-${index}`;

/**
 * The claim loops for `workers` x `handlersPerWorker` handlers: with
 * `batched`, one loop per worker asking for as many jobs as it has idle
 * handlers; without, one loop per handler, one job per claim. `workerOf`
 * maps a loop to its worker.
 */
export function loopLayout({ workers, handlersPerWorker, batched }) {
  const loopsPerWorker = batched ? 1 : handlersPerWorker;
  return {
    loops: workers * loopsPerWorker,
    handlersPerLoop: batched ? handlersPerWorker : 1,
    workerOf: (loopIndex) => Math.floor(loopIndex / loopsPerWorker),
  };
}

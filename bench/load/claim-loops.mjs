// The consumer side of a measurement, for every system whose claim and
// complete calls we drive ourselves (hand-written SQL, pg-boss fetch, Docket):
// claim loops that keep no-op handlers busy until `total` jobs are completed.
//
// A consumer spec {workers, handlersPerWorker, batched} lays out the loops:
// - not batched: one loop per handler, each claiming one job, completing
//   it, claiming the next ("one job per claim"); 1 x 16 and 16 x 1 both make
//   16 loops, sharing one worker or each its own;
// - batched: one loop per worker asking for as many jobs as the worker has
//   idle handlers, reporting each job's completion as soon as its handler
//   returns, without waiting for the rest of the batch ("batched claims").
//
// The measurement ends at the completion of the last job; claims still
// waiting then (long polls on an empty queue) are aborted and not counted.
import { setMaxListeners } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { wallClock } from '../generators/protocol.mjs';

/** The loops for a consumer spec, and the worker each loop belongs to. */
function loopLayout({ workers, handlersPerWorker, batched }) {
  const loopsPerWorker = batched ? 1 : handlersPerWorker;
  return {
    loops: workers * loopsPerWorker,
    handlersPerLoop: batched ? handlersPerWorker : 1,
    workerOf: (loopIndex) => Math.floor(loopIndex / loopsPerWorker),
  };
}

/** An `idle` for polling systems: pause `ms` after an empty claim. */
export const pollPause = (ms) => (signal) => sleep(ms, undefined, { signal });

/**
 * Runs the claim loops of `spec` until `total` jobs are completed.
 * - `claim(workerIndex, maxJobs, signal)` resolves with the jobs claimed
 *   (maybe none, after waiting if the system long-polls);
 * - `complete(job)` reports one job's success;
 * - `idle(signal)` is awaited after an empty claim (a polling pause).
 * Resolves with the count, wall-clock start and end (epoch ms) and each
 * job's latency from the claim call that returned it to its completion.
 */
export async function runClaimLoops({ total, spec, claim, complete, idle = async () => {} }) {
  const { loops, handlersPerLoop, workerOf } = loopLayout(spec);
  const stop = new AbortController();
  setMaxListeners(0, stop.signal); // every waiting claim listens to it
  const latencies = [];
  let claimed = 0;
  let completed = 0;
  let endedAt;
  const startedAt = wallClock();

  const loop = async (loopIndex) => {
    const running = new Set();
    while (!stop.signal.aborted && claimed < total) {
      if (running.size >= handlersPerLoop) {
        await Promise.race(running);
        continue;
      }
      const asked = performance.now();
      let jobs;
      try {
        jobs = await claim(workerOf(loopIndex), handlersPerLoop - running.size, stop.signal);
      } catch (error) {
        if (stop.signal.aborted) break;
        throw error;
      }
      if (jobs.length === 0) {
        await idle(stop.signal).catch(() => undefined);
        continue;
      }
      claimed += jobs.length;
      for (const job of jobs) {
        const handled = complete(job).then(() => {
          latencies.push(performance.now() - asked);
          running.delete(handled);
          completed += 1;
          if (completed === total) {
            endedAt = wallClock();
            stop.abort();
          }
        });
        running.add(handled);
      }
    }
    await Promise.all(running);
  };

  const loopsDone = Promise.all(Array.from({ length: loops }, (_, index) => loop(index)));
  loopsDone.catch(() => stop.abort()); // one loop failed: end the others too
  await loopsDone;
  return { count: completed, startedAt, endedAt, latencies };
}

// The consumer side of a measurement, for every system whose claim and
// complete calls we drive ourselves (hand-written SQL, pg-boss fetch, Docket):
// claim loops that keep no-op handlers busy until `total` jobs are completed.
//
// - `handlersPerLoop` 1: each loop claims one job, completes it, claims the
//   next ("one job per claim"); 16 loops make 16 handlers.
// - `handlersPerLoop` > 1: a loop asks for as many jobs as it has idle
//   handlers and reports each job's completion as soon as its handler
//   returns, without waiting for the rest of the batch ("batched claims").
//
// The measurement ends at the completion of the last job; claims still
// waiting then (long polls on an empty queue) are aborted and not counted.
import { wallClock } from '../generators/protocol.mjs';

/**
 * Runs claim loops until `total` jobs are completed.
 * - `claim(loopIndex, maxJobs, signal)` resolves with the jobs claimed (maybe
 *   none, after waiting if the system long-polls);
 * - `complete(job, loopIndex)` reports one job's success;
 * - `idle(signal)` is awaited after an empty claim (a polling pause).
 * Resolves with the count, wall-clock start and end (epoch ms) and each
 * job's latency from the claim call that returned it to its completion.
 */
export async function runClaimLoops({ total, loops, handlersPerLoop, claim, complete, idle = async () => {} }) {
  const stop = new AbortController();
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
        jobs = await claim(loopIndex, handlersPerLoop - running.size, stop.signal);
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
        const handled = complete(job, loopIndex).then(() => {
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

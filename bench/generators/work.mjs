// Load generator: the worker of the fixed-rate scenario. Set-up (untimed):
// a warm-up round of the same worker on another queue, then the driver's
// worker of `concurrency` handlers on `queue`, started and idle. Each job's
// handler notes when it started and waits `workMs` (a timer, not a busy
// loop: 1,200 busy milliseconds a second would take most of a core of
// this 2-core machine away from the systems measured). The timed part runs
// until the orchestrator says `finish` (when the queue has drained, or the
// drain period is over), then the worker is stopped.
//
// Result: count (distinct jobs whose handler ran), startedAt/endedAt, the
// jobs whose handler ran more than once and the extra runs, and each first
// run's [submittedAt, pickup ms] (submit to handler start) flattened, for
// the orchestrator to split at the restart.
import { setTimeout as sleep } from 'node:timers/promises';
import { loadDriver } from '../drivers.mjs';
import { serveGenerator, wallClock } from './protocol.mjs';

/** Pool size for a peer's worker (pg-boss: `max`). */
const CONNECTIONS = 36;

/** pg-boss's work() does not await its own complete(): a failed one is an unhandled rejection here, counted. */
const unhandled = { count: 0, first: undefined };

serveGenerator(
  async ({ system, queue, concurrency, workMs, warmUp = 0, keyPrefix }) => {
    const errors = { count: 0, first: undefined };
    const driver = await (await loadDriver(system.kind)).open(system, {
      connections: CONNECTIONS,
      onError: (error) => ((errors.count += 1), (errors.first ??= String(error?.message ?? error).slice(0, 200))),
    });
    if (warmUp > 0) {
      let handled = 0;
      await driver.seed(`${queue}-warm`, warmUp, `${keyPrefix}-warm`);
      const warm = await driver.worker(`${queue}-warm`, { concurrency, handler: async () => void (handled += 1) });
      while (handled < warmUp) await sleep(20);
      await warm.stop();
    }
    const runs = new Map();
    const pickups = [];
    const handler = async (input) => {
      const startedAt = wallClock();
      const seen = runs.get(input.index) ?? 0;
      runs.set(input.index, seen + 1);
      if (seen === 0) pickups.push(input.submittedAt, startedAt - input.submittedAt);
      await sleep(workMs);
    };
    const worker = await driver.worker(queue, { concurrency, handler });
    let finish;
    const finished = new Promise((resolve) => (finish = resolve));
    return {
      async run() {
        const startedAt = wallClock();
        await finished;
        const endedAt = wallClock();
        await worker.stop();
        const repeated = [...runs.values()].filter((count) => count > 1);
        return {
          count: runs.size,
          startedAt,
          endedAt,
          duplicated: repeated.length,
          extraRuns: repeated.reduce((sum, count) => sum + count - 1, 0),
          pickups,
          libraryErrors: errors,
          unhandledRejections: unhandled,
          notes: worker.notes(),
          options: { ...driver.options, ...worker.options, concurrency, workMs, work: `setTimeout ${workMs} ms` },
        };
      },
      finish: () => finish(),
      close: () => driver.close(),
    };
  },
  { onUnhandledRejection: (reason) => ((unhandled.count += 1), (unhandled.first ??= String(reason?.message ?? reason).slice(0, 200))) },
);

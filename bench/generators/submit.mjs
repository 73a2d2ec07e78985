// Load generator: `callers` closed-loop callers submitting `total` jobs to
// one queue of one system (after a warm-up on another queue); end to end, the
// producer side. Result: count, wall-clock start and end, per-call p50/p99,
// the driver's options.
import { loadDriver } from '../drivers.mjs';
import { runConcurrently } from '../load/closed-loop.mjs';
import { jobInput, jobKey } from '../load/jobs.mjs';
import { latencySummary } from '../stats.mjs';
import { serveGenerator, wallClock } from './protocol.mjs';

serveGenerator(async ({ system, queue, shape, total, callers, keyPrefix, warmUp = 0 }) => {
  const driver = await (await loadDriver(system.kind)).open(system, { connections: callers + 4 });
  if (warmUp > 0) {
    const warm = await driver.submitter(`${queue}-warm`, shape);
    await runConcurrently(warmUp, callers, (index) => warm(jobKey(`${keyPrefix}-warm`, index), jobInput(index)));
  }
  const submit = await driver.submitter(queue, shape);
  return {
    async run() {
      const startedAt = wallClock();
      const { latencies } = await runConcurrently(total, callers, (index) => submit(jobKey(keyPrefix, index), jobInput(index)));
      return { count: total, startedAt, endedAt: wallClock(), ...latencySummary(latencies), options: driver.options };
    },
    close: () => driver.close(),
  };
});

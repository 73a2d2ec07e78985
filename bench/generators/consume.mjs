// Load generator: claim + complete `total` jobs of one queue with the
// consumer layout `spec` (see the drivers). Untimed set-up: a warm-up round
// of the same layout on another queue, then `seed` jobs submitted to the
// queue (0 when producers fill it during the run, end to end). Result:
// count, wall-clock start and end, per-job p50/p99 from claim to completion
// where the driver runs the claim loops (none for pg-boss work() and
// graphile-worker run(), whose loops are their own), the driver's options.
import { loadDriver } from '../drivers.mjs';
import { latencySummary } from '../stats.mjs';
import { serveGenerator } from './protocol.mjs';

serveGenerator(async ({ system, queue, spec, total, seed = 0, keyPrefix, warmUp = 0, connections }) => {
  const driver = await (await loadDriver(system.kind)).open(system, { connections });
  if (warmUp > 0) {
    await driver.seed(`${queue}-warm`, warmUp, `${keyPrefix}-warm`);
    await (await driver.consumer(`${queue}-warm`, warmUp, spec)).run();
  }
  if (seed > 0) await driver.seed(queue, seed, keyPrefix);
  const consumer = await driver.consumer(queue, total, spec);
  return {
    async run() {
      const { latencies, ...result } = await consumer.run();
      return { ...result, ...latencySummary(latencies), options: driver.options };
    },
    close: () => driver.close(),
  };
});

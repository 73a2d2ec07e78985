// Load generator that only fills a queue: `count` jobs into `queue` the way
// the system's driver seeds (Docket: SubmitJob at 64 callers; hand-written
// SQL: one INSERT ... SELECT per 50,000). Used once per run for the large
// backlog, before any timed measurement.
import { loadDriver } from '../drivers.mjs';
import { serveGenerator, wallClock } from './protocol.mjs';

serveGenerator(async ({ system, queue, count, keyPrefix }) => {
  const driver = await (await loadDriver(system.kind)).open(system, { connections: 8 });
  return {
    async run() {
      const startedAt = wallClock();
      await driver.seed(queue, count, keyPrefix);
      return { count, startedAt, endedAt: wallClock() };
    },
    close: () => driver.close(),
  };
});

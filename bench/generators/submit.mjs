// Load generator: `callers` closed-loop callers submitting `total` jobs to
// one queue of one system (after a warm-up on another queue), one job per
// call or `batch` per call; end to end, the producer side. Result: count, wall-clock start and end, per-call p50/p99,
// the driver's options.
import { loadDriver } from '../drivers.mjs';
import { runConcurrently } from '../load/closed-loop.mjs';
import { jobInput, jobKey } from '../load/jobs.mjs';
import { latencySummary } from '../stats.mjs';
import { serveGenerator, wallClock } from './protocol.mjs';

serveGenerator(async ({ system, queue, shape, total, callers, keyPrefix, warmUp = 0, batch = 0 }) => {
  const driver = await (await loadDriver(system.kind)).open(system, { connections: callers + 4 });
  // With `batch`, each call submits that many jobs (the driver's bulkSubmitter); latencies are per call.
  const submitterFor = async (name, prefix) => {
    if (batch === 0) {
      const submit = await driver.submitter(name, shape);
      return (index) => submit(jobKey(prefix, index), jobInput(index));
    }
    const submitMany = await driver.bulkSubmitter(name, shape);
    const indexes = (index) => Array.from({ length: batch }, (_, offset) => index * batch + offset);
    return (index) => submitMany(indexes(index).map((job) => jobKey(prefix, job)), indexes(index).map(jobInput));
  };
  const calls = (jobs) => (batch === 0 ? jobs : Math.ceil(jobs / batch));
  if (warmUp > 0) {
    const warm = await submitterFor(`${queue}-warm`, `${keyPrefix}-warm`);
    await runConcurrently(calls(warmUp), callers, warm);
  }
  const submit = await submitterFor(queue, keyPrefix);
  return {
    async run() {
      const startedAt = wallClock();
      const { latencies } = await runConcurrently(calls(total), callers, submit);
      return { count: calls(total) * (batch || 1), startedAt, endedAt: wallClock(), ...latencySummary(latencies), options: { ...driver.options, ...(batch ? { jobsPerCall: batch } : {}) } };
    },
    close: () => driver.close(),
  };
});

// Load generator: an open-loop submitter (the fixed-rate scenario). It
// offers `rate` jobs/s for `durationMs` to one queue, submission i leaving at
// start + i / rate whether or not earlier ones have returned, each job's
// input stamped with the moment it left (`submittedAt`, epoch ms). At most
// `inFlightCap` submissions are in flight: one due while the cap is reached
// waits for a free slot and is counted `late` (with how late it left);
// none is dropped. Submissions still waiting or unanswered `graceMs` after
// the schedule's end are counted (`notSent`, `unanswered`), not awaited.
// A failed submission is counted with its error, not retried. Untimed
// set-up: `warmUp` closed-loop submissions to another queue.
//
// Result: count (acknowledged), startedAt/endedAt, and for the ledger the
// acknowledged jobs' ids and indexes with the times each left and its
// answer came back (ms after startedAt).
import { setTimeout as sleep } from 'node:timers/promises';
import { loadDriver } from '../drivers.mjs';
import { runConcurrently } from '../load/closed-loop.mjs';
import { jobInput, jobKey } from '../load/jobs.mjs';
import { quantile } from '../stats.mjs';
import { serveGenerator, wallClock } from './protocol.mjs';

/** Pool size for a peer's submissions (pg-boss: `max`). */
const CONNECTIONS = 36;
/** How often the schedule is looked at; every submission due by then leaves. */
const TICK_MS = 1;

serveGenerator(async ({ system, queue, rate, durationMs, inFlightCap, graceMs, keyPrefix, warmUp = 0, shape }) => {
  const driver = await (await loadDriver(system.kind)).open(system, { connections: CONNECTIONS, onError: () => undefined });
  if (warmUp > 0) {
    const warm = await driver.submitter(`${queue}-warm`, shape);
    await runConcurrently(warmUp, 16, (index) => warm(jobKey(`${keyPrefix}-warm`, index), jobInput(index)));
  }
  const submit = await driver.submitter(queue, shape);
  return {
    async run() {
      const total = Math.round((rate * durationMs) / 1000);
      const acked = { ids: [], indexes: [], sentMs: [], atMs: [] };
      const failed = { count: 0, byMessage: {} };
      const lags = [];
      const waiting = [];
      let inFlight = 0;
      let late = 0;
      let answered = 0;
      let sent = 0;
      const startedAt = wallClock();
      const scheduledAt = (index) => startedAt + (index * 1000) / rate;

      const send = (index) => {
        inFlight += 1;
        sent += 1;
        const submittedAt = wallClock();
        lags.push(submittedAt - scheduledAt(index));
        submit(jobKey(keyPrefix, index), { ...jobInput(index), submittedAt }).then(
          (id) => {
            acked.ids.push(String(id));
            acked.indexes.push(index);
            acked.sentMs.push(Math.round(submittedAt - startedAt));
            acked.atMs.push(Math.round(wallClock() - startedAt));
          },
          (error) => {
            failed.count += 1;
            const message = String(error?.message ?? error).slice(0, 120);
            failed.byMessage[message] = (failed.byMessage[message] ?? 0) + 1;
          },
        ).finally(() => {
          inFlight -= 1;
          answered += 1;
          if (waiting.length > 0) send(waiting.shift());
        });
      };

      let next = 0;
      while (next < total) {
        const due = Math.min(total, Math.floor(((wallClock() - startedAt) * rate) / 1000) + 1);
        for (; next < due; next += 1) {
          if (inFlight < inFlightCap) send(next);
          else (late += 1), waiting.push(next);
        }
        await sleep(TICK_MS);
      }
      const scheduleEnd = wallClock();
      while (answered < sent || waiting.length > 0) {
        if (wallClock() - scheduleEnd > graceMs) break;
        await sleep(20);
      }
      const endedAt = wallClock();
      return {
        count: acked.ids.length,
        startedAt,
        endedAt,
        offered: total,
        sent,
        late,
        notSent: waiting.splice(0).length,
        unanswered: sent - answered,
        failed,
        lagP50Ms: quantile(lags, 0.5) ?? null,
        lagP99Ms: quantile(lags, 0.99) ?? null,
        lagMaxMs: lags.length > 0 ? Math.max(...lags) : null,
        acked,
        options: { ...driver.options, rate, durationMs, inFlightCap, tickMs: TICK_MS },
      };
    },
    close: () => driver.close(),
  };
});

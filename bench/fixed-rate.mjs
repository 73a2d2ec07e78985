// What a user of a job queue feels under a fixed offered load, and across a
// PostgreSQL restart (issue 35): Docket and pg-boss 10.4 side by side in one
// run, one after the other on the run's one server, each in a database of
// its own and each with its own restart. `npm run bench -- --only fixed-rate`.
//
// For each system, two forked generators start together: an open-loop
// submitter (bench/generators/offer.mjs: BENCH_FIXED_RATE jobs/s, default
// 1,200, for BENCH_FIXED_SECONDS, default 60, 20 with --quick; each job
// stamped with the moment it left; Docket's is the Docket client's submit()
// with coalesceSubmissions, as a producer at this rate would run it, or a
// SubmitJob per job with BENCH_FIXED_SUBMIT=alone) and a worker of 32 handlers whose jobs
// each wait 1 ms (bench/generators/work.mjs: Docket's createWorker, pg-boss's
// work(); see the drivers). Halfway through, this process restarts the
// server (BENCH_RESTART_MODE: fast, the default, or immediate; same port,
// same data directory). When the schedule is over, the queue gets a drain
// period (BENCH_FIXED_DRAIN_SECONDS, default 45: longer than Docket's 30 s
// lease, so a job whose worker lost it is offered again within it) and the
// worker stops as soon as no job of the queue is left undone.
//
// Then the ledger, from the system's own tables: every acknowledged
// submission must exist and be done (else `lost`; `missing` if it does not
// exist at all); the worker counts the jobs whose handler ran more than
// once. Completions per second come from the completion times the database
// recorded; admissions per second from the submitter's answers. Recovery:
// from the moment the restart began to the first of 3 one-second buckets in
// a row with completions >= 95% of the offered rate.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadDriver } from './drivers.mjs';
import { runGenerators } from './generator-host.mjs';
import { SYSTEM_NAMES } from './plan.mjs';
import { query } from './postgres.mjs';
import { cpuSnapshot } from './process-cpu.mjs';
import { cpuPerJob, serviceCpu } from './report/cpu-per-job.mjs';
import { quantile } from './stats.mjs';
import { startSystems } from './systems.mjs';

export const FIXED_RATE_GROUP = 'fixed-rate';
const HANDLERS = 32;
const WORK_MS = 1;
const IN_FLIGHT_CAP = 2_000;
/** Submissions still unanswered this long after the schedule's end are counted, not awaited. */
const GRACE_MS = 15_000;
/** Completions per second at or above this share of the offered rate are "at pace". */
const PACE = 0.95;
/** Seconds in a row at pace that count as recovered. */
const STREAK = 3;

const LABELS = {
  docket: (submit) =>
    `${submit === 'coalesced' ? 'client submit() with coalesceSubmissions' : 'SubmitJob'} + createWorker, ${HANDLERS} handlers (worker session)`,
  pgboss: () => `send() + work(), batchSize ${HANDLERS}, notifyWorker`,
};

/** The scenario's settings from the environment. */
export function fixedRateSettings({ quick }) {
  const number = (name, fallback) => {
    const value = Number(process.env[name] ?? fallback);
    if (!(value > 0)) throw new Error(`${name} must be a positive number`);
    return value;
  };
  const mode = process.env.BENCH_RESTART_MODE ?? 'fast';
  if (!['fast', 'immediate'].includes(mode)) throw new Error('BENCH_RESTART_MODE is fast or immediate');
  const submit = process.env.BENCH_FIXED_SUBMIT ?? 'coalesced';
  if (!['coalesced', 'alone'].includes(submit)) throw new Error('BENCH_FIXED_SUBMIT is coalesced or alone');
  return {
    rate: number('BENCH_FIXED_RATE', 1_200),
    durationMs: number('BENCH_FIXED_SECONDS', quick ? 20 : 60) * 1000,
    drainMs: number('BENCH_FIXED_DRAIN_SECONDS', 45) * 1000,
    mode,
    submit,
    warmUp: quick ? 20 : 100,
  };
}

const sumRoles = (parts) => {
  const present = parts.filter(Boolean);
  if (present.length === 0) return undefined;
  const total = {};
  for (const part of present) for (const [role, us] of Object.entries(part)) total[role] = (total[role] ?? 0) + us;
  return total;
};

/**
 * Counts of `times` (epoch ms) per 1 s bucket from `origin`: Map bucket
 * index (negative before the origin) -> count.
 */
function perSecond(times, origin) {
  const buckets = new Map();
  for (const time of times) {
    const bucket = Math.floor((time - origin) / 1000);
    buckets.set(bucket, (buckets.get(bucket) ?? 0) + 1);
  }
  return buckets;
}

/**
 * Seconds from the restart to the first of STREAK buckets in a row each at
 * pace (or, `mean`, at pace on average: a system that completes in bursts,
 * such as a polling one, may rarely have three full seconds in a row), or
 * Infinity.
 */
function recoverySeconds(completed, rate, lastBucket, { mean = false } = {}) {
  for (let bucket = 0; bucket + STREAK - 1 <= lastBucket; bucket += 1) {
    const counts = Array.from({ length: STREAK }, (_, offset) => completed.get(bucket + offset) ?? 0);
    const atPace = mean ? counts.reduce((sum, count) => sum + count, 0) / STREAK >= PACE * rate : counts.every((count) => count >= PACE * rate);
    if (atPace) return bucket;
  }
  return Infinity;
}

/** One system's measurement: the two generators, the restart halfway, the drain, the ledger. */
async function measure({ server, systems, system, settings, runId }) {
  const { rate, durationMs, drainMs, mode, submit, warmUp } = settings;
  const instance = `${system}@${FIXED_RATE_GROUP}`;
  const connection = systems.connect(instance);
  const driver = await loadDriver(connection.kind);
  const queue = `${FIXED_RATE_GROUP}-${runId}-${system}`;
  const keyPrefix = `${runId}-${FIXED_RATE_GROUP}-${system}`;
  await query(server.adminUrl, 'checkpoint'); // both systems start from a clean server
  let restart;
  let midRun;
  let cpu;
  const drain = { waitedMs: 0, pendingAtEnd: undefined };
  const [offered, worked] = await runGenerators(
    [
      {
        script: 'offer.mjs',
        config: { system: connection, queue, rate, durationMs, inFlightCap: IN_FLIGHT_CAP, graceMs: GRACE_MS, keyPrefix, warmUp, shape: connection.kind === 'docket' && submit === 'coalesced' ? 'coalesced' : undefined },
      },
      { script: 'work.mjs', config: { system: connection, queue, concurrency: HANDLERS, workMs: WORK_MS, warmUp, keyPrefix: `${keyPrefix}-w` } },
    ],
    {
      timeoutMs: durationMs + GRACE_MS + drainMs + 5 * 60_000,
      onTimed: (before, after, generatorPids) => (cpu = { before, after, generatorPids }),
      whileRunning: async ([submitter, worker]) => {
        await sleep(durationMs / 2);
        // The restart ends every PostgreSQL process: their CPU so far is read now.
        midRun = cpuSnapshot();
        restart = await server.restart(mode);
        const { endedAt } = await submitter.result;
        const drainStart = Date.now();
        while (Date.now() < endedAt + drainMs) {
          drain.pendingAtEnd = await driver.pendingJobs(connection.databaseUrl, queue).catch(() => undefined);
          if (drain.pendingAtEnd === 0) break;
          await sleep(1000);
        }
        drain.waitedMs = Date.now() - drainStart;
        worker.finish();
      },
    },
  );
  const jobs = await driver.ledger(connection.databaseUrl, queue);
  const complaints = systems.docketDeployments().find((deployment) => deployment.instance === instance)?.complaints ?? [];

  // The ledger.
  const byId = new Map(jobs.map((job) => [String(job.id), job]));
  const ackedIds = offered.acked.ids;
  const missing = ackedIds.filter((id) => !byId.has(id)).length;
  const notDone = ackedIds.map((id) => byId.get(id)).filter((job) => !job?.done);
  const lost = notDone.length;
  // Of those, where they are: still waiting (a backlog the drain did not clear) or started and never completed.
  const lostWhere = { queued: 0, running: 0, other: 0 };
  for (const job of notDone) if (job) lostWhere[job.where] = (lostWhere[job.where] ?? 0) + 1;
  const ackedSet = new Set(ackedIds);
  const unacknowledgedStored = jobs.filter((job) => !ackedSet.has(String(job.id))).length;
  const doneTimes = jobs.filter((job) => job.done && Number.isFinite(job.doneAt)).map((job) => job.doneAt);

  // Rates: over the schedule, and before the restart.
  const runStart = offered.startedAt;
  const runEnd = runStart + durationMs;
  const restartAt = restart.beganAt;
  const ackTimes = offered.acked.atMs.map((ms) => runStart + ms);
  const within = (times, from, to) => times.filter((time) => time >= from && time < to).length;
  const perSecondOver = (count, from, to) => (count * 1000) / (to - from);
  const completedBefore = perSecondOver(within(doneTimes, runStart, restartAt), runStart, restartAt);

  // 1 s buckets from the restart; recovery.
  const admittedBuckets = perSecond(ackTimes, restartAt);
  const completedBuckets = perSecond(doneTimes, restartAt);
  const lastDoneAt = doneTimes.reduce((latest, time) => Math.max(latest, time), -Infinity);
  const lastBucket = Math.floor((Math.max(runEnd, lastDoneAt) - restartAt) / 1000);
  // Buckets after the last completion are empty because the work is done, not because the system is down.
  const lastDoneBucket = Math.floor((lastDoneAt - restartAt) / 1000);
  const recovery = recoverySeconds(completedBuckets, rate, lastDoneBucket);
  const recoveryOnAverage = recoverySeconds(completedBuckets, rate, lastDoneBucket, { mean: true });

  // Pickup latency, split at the restart. An acknowledged job whose handler never started counts as never picked
  // up (Infinity), so that a backlog left behind is not read as fast pickups of the jobs that made it.
  const before = [];
  const after = [];
  for (let index = 0; index < worked.pickups.length; index += 2) (worked.pickups[index] < restartAt ? before : after).push(worked.pickups[index + 1]);
  const ackedBefore = offered.acked.sentMs.filter((ms) => runStart + ms < restartAt).length;
  const neverPicked = { before: Math.max(0, ackedBefore - before.length), after: Math.max(0, ackedIds.length - ackedBefore - after.length) };
  before.push(...Array(neverPicked.before).fill(Infinity));
  after.push(...Array(neverPicked.after).fill(Infinity));

  // CPU per completed job: the restart ends every PostgreSQL process, so the run is read in two halves.
  const servicePids = systems.pidsOf(instance);
  const completed = doneTimes.length;
  const cpuUsPerJob = cpu && midRun
    ? sumRoles([
        cpuPerJob({ before: cpu.before, after: midRun, generatorPids: cpu.generatorPids }, servicePids, completed),
        cpuPerJob({ before: midRun, after: cpu.after, generatorPids: cpu.generatorPids }, servicePids, completed),
      ])
    : undefined;

  const row = {
    scenario: FIXED_RATE_GROUP,
    group: `fixed rate ${rate.toLocaleString('en-US')}/s for ${durationMs / 1000} s, PostgreSQL restart (${mode}) halfway`,
    groupKey: FIXED_RATE_GROUP,
    system,
    systemName: SYSTEM_NAMES[system],
    label: LABELS[connection.kind](submit),
    callers: HANDLERS,
    jobs: ackedIds.length,
    reps: 1,
    // The results table's jobs/s and p50/p99: completions per second over the schedule, pickup before the restart.
    jobsPerSecond: perSecondOver(within(doneTimes, runStart, runEnd), runStart, runEnd),
    p50Ms: quantile(before, 0.5) ?? null,
    p99Ms: quantile(before, 0.99) ?? null,
    cpuUsPerJob,
    serviceCpuUsPerJob: serviceCpu(cpuUsPerJob),
    offeredPerSecond: rate,
    admittedPerSecond: perSecondOver(within(ackTimes, runStart, runEnd), runStart, runEnd),
    completedPerSecondBeforeRestart: completedBefore,
    paceBeforeRestart: completedBefore / rate,
    pickupAfterRestartP50Ms: quantile(after, 0.5) ?? null,
    pickupAfterRestartP99Ms: quantile(after, 0.99) ?? null,
    recoverySeconds: recovery,
    recoveryOnAverageSeconds: recoveryOnAverage,
    lost,
    missing,
    duplicated: worked.duplicated,
  };
  const detail = {
    system: SYSTEM_NAMES[system],
    restart: { ...restart, downMs: restart.downAt - restart.beganAt, upMs: restart.upAt - restart.beganAt, atSecond: (restartAt - runStart) / 1000 },
    submissions: {
      offered: offered.offered,
      sent: offered.sent,
      acknowledged: ackedIds.length,
      failed: offered.failed.count,
      failures: offered.failed.byMessage,
      lateForTheCap: offered.late,
      notSent: offered.notSent,
      unanswered: offered.unanswered,
      lagP50Ms: offered.lagP50Ms,
      lagP99Ms: offered.lagP99Ms,
      lagMaxMs: offered.lagMaxMs,
    },
    neverPickedUp: neverPicked,
    ledger: { stored: jobs.length, done: completed, lost, lostStillQueued: lostWhere.queued, lostRunning: lostWhere.running, lostOther: lostWhere.other, missing, unacknowledgedStored, duplicated: worked.duplicated, extraRuns: worked.extraRuns, retriedInLedger: jobs.filter((job) => job.attempts > 1).length },
    drain,
    serviceComplaints: summarizeComplaints(complaints),
    worker: { handled: worked.count, libraryErrors: worked.libraryErrors, unhandledRejections: worked.unhandledRejections, notes: worked.notes },
    options: { submitter: offered.options, worker: worked.options },
  };
  const buckets = { admitted: admittedBuckets, completed: completedBuckets, from: Math.floor((runStart - restartAt) / 1000), to: lastBucket };
  return { row, detail, buckets };
}

/** The warning and error lines a Docket deployment's services logged: counts by service and level, and the first few messages. */
function summarizeComplaints(complaints) {
  const counts = {};
  for (const { service, level } of complaints) counts[`${service} ${level}`] = (counts[`${service} ${level}`] ?? 0) + 1;
  const message = (line) => {
    try {
      const entry = JSON.parse(line);
      return [entry.msg, entry.rpc, entry.code, entry.reason].filter(Boolean).join(' ');
    } catch {
      return line;
    }
  };
  const distinct = [...new Set(complaints.map(({ service, line }) => `${service}: ${String(message(line)).slice(0, 200)}`))];
  return { count: complaints.length, counts, first: distinct.slice(0, 8) };
}

const integer = (value) => (value === undefined || value === null || !Number.isFinite(value) ? '-' : Math.round(value).toLocaleString('en-US'));
const ms = (value) => (value === undefined || value === null ? '-' : Number.isFinite(value) ? value.toFixed(1) : 'never');

/** The per-system table's row. */
function summaryLine({ row, detail }) {
  const cpuAll = row.cpuUsPerJob ? Object.values(row.cpuUsPerJob).reduce((sum, value) => sum + value, 0) : undefined;
  const { submissions, ledger, restart } = detail;
  return {
    system: row.systemName,
    case: row.label,
    'offered/s': integer(row.offeredPerSecond),
    'admitted/s': integer(row.admittedPerSecond),
    'completed/s': integer(row.jobsPerSecond),
    'completed/s before restart': `${integer(row.completedPerSecondBeforeRestart)} (${row.paceBeforeRestart.toFixed(2)}x)`,
    'pickup p50/p99 ms before (never picked up)': `${ms(row.p50Ms)} / ${ms(row.p99Ms)} (${integer(detail.neverPickedUp.before)})`,
    'pickup p50/p99 ms after (never picked up)': `${ms(row.pickupAfterRestartP50Ms)} / ${ms(row.pickupAfterRestartP99Ms)} (${integer(detail.neverPickedUp.after)})`,
    'PostgreSQL down..up s': `${(restart.downMs / 1000).toFixed(1)}..${(restart.upMs / 1000).toFixed(1)}`,
    'recovery s (3 s each / on average)': [row.recoverySeconds, row.recoveryOnAverageSeconds].map((seconds) => (Number.isFinite(seconds) ? String(seconds) : 'never')).join(' / '),
    'acked / failed / late / not sent / unanswered': [submissions.acknowledged, submissions.failed, submissions.lateForTheCap, submissions.notSent, submissions.unanswered].map(integer).join(' / '),
    'lost (still queued / running / other / missing)': `${integer(ledger.lost)} (${[ledger.lostStillQueued, ledger.lostRunning, ledger.lostOther, ledger.missing].map(integer).join(' / ')})`,
    'duplicated / stored unacked': `${integer(ledger.duplicated)} / ${integer(ledger.unacknowledgedStored)}`,
    'CPU us/job': integer(cpuAll),
    'service warnings': integer(detail.serviceComplaints.count),
  };
}

/** The 1 s buckets of every system side by side, seconds counted from each system's own restart. */
function secondsTable(measurements) {
  const from = Math.min(...measurements.map(({ buckets }) => buckets.from));
  const to = Math.max(...measurements.map(({ buckets }) => buckets.to));
  const lines = [];
  for (let bucket = from; bucket <= to; bucket += 1) {
    const line = { 's from restart': String(bucket) };
    for (const { row, buckets } of measurements) {
      line[`${row.systemName} admitted`] = integer(buckets.admitted.get(bucket) ?? 0);
      line[`${row.systemName} completed`] = integer(buckets.completed.get(bucket) ?? 0);
    }
    lines.push(line);
  }
  return lines;
}

/**
 * Runs the scenario for Docket (and the baseline checkout, when given) and
 * pg-boss; resolves with the summary rows (one per system, for the results,
 * CPU, ratio and goal tables and the history) and its own two tables.
 */
export async function benchFixedRate({ server, roots, quick }) {
  const settings = fixedRateSettings({ quick });
  const runId = randomBytes(3).toString('hex');
  const order = [...Object.keys(roots), 'pgboss'];
  const systems = await startSystems(server, order.map((system) => `${system}@${FIXED_RATE_GROUP}`), roots);
  const measurements = [];
  const failures = [];
  try {
    for (const system of order) {
      try {
        const measurement = await measure({ server, systems, system, settings, runId });
        measurements.push(measurement);
        const { row, detail } = measurement;
        console.log(
          `  fixed-rate ${row.systemName}: admitted ${integer(row.admittedPerSecond)}/s, completed ${integer(row.jobsPerSecond)}/s (before the restart ${row.paceBeforeRestart.toFixed(2)}x of ${integer(settings.rate)}/s), pickup p99 ${ms(row.p99Ms)} ms, recovery ${Number.isFinite(row.recoverySeconds) ? `${row.recoverySeconds} s` : 'never'}, lost ${detail.ledger.lost}, duplicated ${detail.ledger.duplicated}`,
        );
      } catch (error) {
        failures.push(`${SYSTEM_NAMES[system]}: ${error.stack ?? error}`);
        console.log(`  fixed-rate ${SYSTEM_NAMES[system]}: FAILED ${String(error.message ?? error).split('\n').slice(0, 4).join(' | ')}`);
      }
    }
  } finally {
    await systems.stop();
  }
  const result = {
    rows: measurements.map(({ row }) => row),
    tables: {
      'fixed-rate': {
        title: `fixed-rate: ${integer(settings.rate)} jobs/s offered for ${settings.durationMs / 1000} s, ${HANDLERS} handlers of ${WORK_MS} ms, PostgreSQL restart (${settings.mode}) at ${settings.durationMs / 2000} s`,
        rows: measurements.map(summaryLine),
        details: measurements.map(({ detail }) => detail),
      },
      'fixed-rate-seconds': { title: 'fixed-rate: admitted and completed per 1 s bucket, seconds from each system\'s restart', rows: measurements.length > 0 ? secondsTable(measurements) : [] },
    },
  };
  if (failures.length > 0) throw Object.assign(new Error(failures.join('\n')), { outcome: result });
  return result;
}

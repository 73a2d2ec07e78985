// Claim + complete throughput with 16 concurrent no-op handlers, through
// real execution and state processes, against pg-boss 10.4 on the same
// embedded PostgreSQL in the same run; then the reaper's settlement latency
// after lease expiry with the default 1 s reaper interval and 30 s lease.
//
// Docket: one worker incarnation with max_concurrency 16 (the SDK's shape:
// a claim loop that keeps 16 handlers busy, each reporting its outcome as
// it finishes) and, for comparison, 16 incarnations of one handler each.
// pg-boss: 16 handlers as 16 workers x batch 1 and as 1 worker x batch 16;
// a pg-boss worker fetches a batch, runs the handler on it, completes it,
// and waits out its polling interval (0.5 s, the minimum) before fetching
// again. A third pg-boss row runs 16 fetch/complete loops without that
// pause, to show pg-boss's own database work.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { clientWith, quantile, runConcurrently, startSystem } from './support.mjs';

const JOBS = Number(process.env.BENCH_CLAIM_JOBS ?? 2000);
const HANDLERS = 16;
const REAPED_JOBS = Number(process.env.BENCH_REAPED_JOBS ?? 200);

const operationId = () => `op_${randomBytes(16).toString('base64url')}`;

/** Submits `count` jobs to `queue` through admission, 32 at a time. */
async function submit(admission, queue, count) {
  await runConcurrently(count, 32, (index) =>
    admission.submitJob({ idempotencyKey: `bench-${queue}-${index}-${randomBytes(6).toString('hex')}`, queue, input: { index } }),
  );
}

/**
 * Runs `total` jobs of `queue` to completion with `incarnations` worker
 * incarnations of `perIncarnation` concurrent no-op handlers each: a claim
 * loop per incarnation asks for as many jobs as it has idle handlers
 * (long-polling when none is claimable) and reports each job's success as
 * soon as its handler returns.
 */
async function runDocketWorkers(execution, queue, total, incarnations, perIncarnation) {
  let claimed = 0;
  let completed = 0;
  await Promise.all(
    Array.from({ length: incarnations }, async (_, index) => {
      const { workerIncarnation } = await execution.registerWorker({
        workerName: `bench-${queue}-${index}`,
        queues: [queue],
        maxConcurrency: perIncarnation,
      });
      const running = new Set();
      while (claimed < total) {
        if (running.size >= perIncarnation) {
          await Promise.race(running);
          continue;
        }
        const { assignments } = await execution.claimJobs({
          workerIncarnation,
          maxJobs: perIncarnation - running.size,
          wait: { seconds: 1n },
          operationId: operationId(),
        });
        claimed += assignments.length;
        for (const { authority } of assignments) {
          const handled = execution
            .reportOutcome({
              attempt: { attemptId: authority.attemptId, fence: authority.fence, workerIncarnation: authority.workerIncarnation },
              operationId: operationId(),
              outcome: { case: 'success', value: {} },
            })
            .then(() => {
              completed += 1;
              running.delete(handled);
            });
          running.add(handled);
        }
      }
      await Promise.all(running);
    }),
  );
  return completed;
}

async function benchDocket(system, token) {
  const admission = clientWith(AdmissionService, system.urls.admission[0], token);
  const execution = clientWith(ExecutionService, system.urls.execution[0], await system.token('bench-worker', 'worker'));
  const rows = [];
  const warmup = `warmup-${randomBytes(3).toString('hex')}`;
  await submit(admission, warmup, 200);
  await runDocketWorkers(execution, warmup, 200, 1, HANDLERS);
  for (const [incarnations, perIncarnation] of [
    [1, HANDLERS],
    [HANDLERS, 1],
  ]) {
    const queue = `docket-${incarnations}x${perIncarnation}-${randomBytes(3).toString('hex')}`;
    await submit(admission, queue, JOBS);
    const started = performance.now();
    const completed = await runDocketWorkers(execution, queue, JOBS, incarnations, perIncarnation);
    const elapsedMs = performance.now() - started;
    rows.push({
      name: `Docket claim+complete, ${incarnations} worker(s) x ${perIncarnation} handler(s)`,
      'jobs/s': Math.round((completed / elapsedMs) * 1000),
      detail: `${completed} jobs in ${(elapsedMs / 1000).toFixed(2)} s`,
    });
  }
  return rows;
}

async function benchPgBoss(databaseUrl) {
  const boss = new PgBoss({ connectionString: databaseUrl, max: 20 });
  boss.on('error', () => {});
  await boss.start();
  const sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  const rows = [];
  try {
    const timed = async (label, detail, run) => {
      const queue = `pgboss-${randomBytes(4).toString('hex')}`;
      await boss.createQueue(queue);
      for (let offset = 0; offset < JOBS; offset += 500) {
        await boss.insert(Array.from({ length: Math.min(500, JOBS - offset) }, (_, index) => ({ name: queue, data: { index: offset + index } })));
      }
      const started = performance.now();
      await run(queue);
      for (;;) {
        const { rows: counted } = await sql.query(`select count(*)::int as done from pgboss.job where name = $1 and state = 'completed'`, [queue]);
        if (counted[0].done >= JOBS) break;
        await sleep(20);
      }
      const elapsedMs = performance.now() - started;
      rows.push({ name: `pg-boss 10.4 ${label}`, 'jobs/s': Math.round((JOBS / elapsedMs) * 1000), detail: `${JOBS} jobs in ${(elapsedMs / 1000).toFixed(2)} s (${detail})` });
      return queue;
    };
    for (const [workers, batchSize] of [
      [16, 1],
      [1, 16],
    ]) {
      const queue = await timed(`work(), ${workers} worker(s) x batch ${batchSize}`, 'polling 0.5 s, the minimum', async (name) => {
        for (let index = 0; index < workers; index += 1) {
          await boss.work(name, { batchSize, pollingIntervalSeconds: 0.5 }, async () => {});
        }
      });
      await boss.offWork(queue);
    }
    // pg-boss's own database work without its polling pause: 16 loops that
    // fetch one job and complete it, as fast as they can.
    await timed(`fetch()+complete() loops, ${HANDLERS} x 1`, 'no polling pause', async (name) => {
      await Promise.all(
        Array.from({ length: HANDLERS }, async () => {
          for (;;) {
            const [job] = await boss.fetch(name, { batchSize: 1 });
            if (!job) return;
            await boss.complete(name, job.id);
          }
        }),
      );
    });
  } finally {
    await sql.end();
    await boss.stop({ graceful: false, wait: true, timeout: 5_000 });
  }
  return rows;
}

/**
 * Claims REAPED_JOBS jobs and abandons them; once the reaper has settled
 * them all, reads from the database how long after each lease's end its
 * attempt was settled (both instants by the database clock).
 */
async function benchReaper(system, token) {
  const admission = clientWith(AdmissionService, system.urls.admission[0], token);
  const execution = clientWith(ExecutionService, system.urls.execution[0], await system.token('bench-reaped', 'worker'));
  const queue = `reaped-${randomBytes(3).toString('hex')}`;
  await submit(admission, queue, REAPED_JOBS);
  const { workerIncarnation, leaseDuration } = await execution.registerWorker({ workerName: 'abandoner', queues: [queue], maxConcurrency: 1000 });
  let claimed = 0;
  while (claimed < REAPED_JOBS) {
    const { assignments } = await execution.claimJobs({ workerIncarnation, maxJobs: 100, wait: { seconds: 1n }, operationId: operationId() });
    claimed += assignments.length;
  }
  const leaseMs = Number(leaseDuration.seconds) * 1000 + leaseDuration.nanos / 1e6;
  const sql = new pg.Client({ connectionString: system.databaseUrl });
  await sql.connect();
  try {
    for (;;) {
      const { rows } = await sql.query(`select count(*)::int as live from attempts where queue = $1 and status = 'ACTIVE'`, [queue]);
      if (rows[0].live === 0) break;
      await sleep(250);
    }
    const { rows } = await sql.query(
      `select extract(epoch from (ended_at - (started_at + make_interval(secs => $2 / 1000.0)))) * 1000 as late_ms
         from attempts where queue = $1`,
      [queue, leaseMs],
    );
    const latencies = rows.map((row) => Number(row.late_ms));
    return [
      {
        name: `reaper settlement after lease expiry (${REAPED_JOBS} leases, interval 1 s, lease ${leaseMs / 1000} s)`,
        'jobs/s': '',
        detail: `median ${quantile(latencies, 0.5).toFixed(1)} ms, p99 ${quantile(latencies, 0.99).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms`,
      },
    ];
  } finally {
    await sql.end();
  }
}

export async function benchClaims() {
  const system = await startSystem(['state', 'admission', 'execution']);
  try {
    const token = await system.token('bench');
    const docket = await benchDocket(system, token);
    const pgBoss = await benchPgBoss(system.databaseUrl);
    const reaper = await benchReaper(system, token);
    return [...docket, ...pgBoss, ...reaper];
  } finally {
    await system.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await benchClaims());
}

// GetQueueStats and GetQueue over a queue of QUEUE_STATS_JOBS jobs
// (default 1,000,000: 900,000 SUCCEEDED, 90,000 QUEUED over 10
// priorities, 10,000 FAILED), next to the count a reader would otherwise
// run (`select status, count(*) from jobs where queue = $1 group by
// status`), each the median of QUEUE_STATS_CALLS calls through admission
// (+ state) with a Connect client, and the plans
// of the statements the state service runs (EXPLAIN ANALYZE, BUFFERS). The
// jobs are copied from one admitted job by SQL (the rows the triggers
// count, without journals), in statements of 100,000, and the folder's
// work is waited for. In-process, not in the default set:
// `npm run bench -- --only queue-stats`. It writes Docket's `jobs` table
// directly, so it follows that table's schema.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { clientWith, quantile, startSystem } from './support.mjs';

const JOBS = Number(process.env.QUEUE_STATS_JOBS ?? 1_000_000);
const CALLS = Number(process.env.QUEUE_STATS_CALLS ?? 50);
const STATEMENT_ROWS = 100_000;

/** Copies the template job `count` times into `queue` with `status`, priorities 0..9, in statements of {@link STATEMENT_ROWS}. */
async function copyJobs(sql, templateId, queue, status, count, prefix) {
  for (let from = 0; from < count; from += STATEMENT_ROWS) {
    const to = Math.min(count, from + STATEMENT_ROWS);
    await sql.query(
      `insert into jobs (id, owner, queue, label, input, priority, revision, status, lifecycle, request_digest, run_after,
                         max_attempts, initial_backoff_ms, max_backoff_ms, lost_attempt_policy, event_count, head_hash,
                         created_at, updated_at)
       select $2 || lpad(g::text, 20, '0'), t.owner, $3, t.label, t.input, g % 10, 1, $4, 'ACTIVE', t.request_digest, null,
              t.max_attempts, t.initial_backoff_ms, t.max_backoff_ms, t.lost_attempt_policy, 1, t.head_hash,
              now() - (g || ' milliseconds')::interval, now()
       from jobs t, generate_series($5::int, $6::int - 1) g where t.id = $1`,
      [templateId, `job_${prefix}`, queue, status, from, to],
    );
  }
}

/** Median ms of `CALLS` sequential runs of `call`. */
async function medianMs(call) {
  const times = [];
  for (let index = 0; index < CALLS; index += 1) {
    const started = performance.now();
    await call();
    times.push(performance.now() - started);
  }
  return { median: quantile(times, 0.5), p99: quantile(times, 0.99) };
}

export async function benchQueueStats(options) {
  const system = await startSystem(['state', 'admission', 'execution'], options);
  const sql = new pg.Client({ connectionString: system.databaseUrl });
  try {
    await sql.connect();
    const admin = clientWith(AdmissionService, system.urls.admission[0], await system.token('bench-stats', 'admin'));
    const queue = `stats-${randomBytes(3).toString('hex')}`;
    const { job } = await admin.submitJob({ idempotencyKey: `queue-stats-${queue}-template`, queue, input: { n: 1 } });
    const succeeded = Math.round(JOBS * 0.9);
    const failed = Math.round(JOBS * 0.01);
    const queued = JOBS - succeeded - failed - 1;
    await copyJobs(sql, job.id, queue, 'SUCCEEDED', succeeded, 's');
    await copyJobs(sql, job.id, queue, 'FAILED', failed, 'f');
    await copyJobs(sql, job.id, queue, 'QUEUED', queued, 'q');
    await sql.query('vacuum analyze jobs');
    for (;;) {
      const { rows } = await sql.query('select count(*)::int as waiting from queue_stat_deltas');
      if (rows[0].waiting === 0) break;
      await sleep(250);
    }
    const stats = await admin.getQueueStats({ queue });
    const total = stats.counts.reduce((sum, count) => sum + count.jobs, 0n);
    if (total !== BigInt(JOBS)) throw new Error(`GetQueueStats counted ${total} jobs, not ${JOBS}`);
    const rows = [];
    const row = (name, figures) => rows.push({ call: name, 'median ms': figures.median.toFixed(2), 'p99 ms': figures.p99.toFixed(2) });
    row(`GetQueueStats, 1 h in 1 min buckets, ${JOBS.toLocaleString('en')} jobs`, await medianMs(() => admin.getQueueStats({ queue })));
    row('GetQueueStats, 7 days in 10 min buckets', await medianMs(() => admin.getQueueStats({ queue, window: durationFromMs(7 * 86_400_000), bucket: durationFromMs(600_000) })));
    row('GetQueue (the same counters)', await medianMs(() => admin.getQueue({ queue })));
    row('GetJob (for scale)', await medianMs(() => admin.getJob({ jobId: job.id })));
    row('SQL: select status, count(*) from jobs where queue = $1 group by status', await medianMs(() => sql.query('select status, count(*) from jobs where queue = $1 group by status', [queue])));
    for (const [name, text] of [
      ['counts', `select status, sum(jobs) from (select status, jobs from queue_counts where queue = $1 union all select status, jobs from queue_stat_deltas where queue = $1) c group by status`],
      [
        'oldest queued',
        `with recursive priorities as (
           (select priority from jobs where status = 'QUEUED' and queue = $1 order by priority desc limit 1)
           union all
           select (select j.priority from jobs j where j.status = 'QUEUED' and j.queue = $1 and j.priority < p.priority order by j.priority desc limit 1)
           from priorities p where p.priority is not null)
         select min((select j.created_at from jobs j where j.status = 'QUEUED' and j.queue = $1 and j.priority = p.priority order by j.priority desc, j.created_at limit 1))
         from priorities p where p.priority is not null`,
      ],
    ]) {
      const plan = await sql.query(`explain (analyze, buffers, costs off) ${text}`, [queue]);
      console.log(`\nplan, ${name}:\n${plan.rows.map((line) => `  ${line['QUERY PLAN']}`).join('\n')}`);
    }
    return rows;
  } finally {
    await sql.end().catch(() => undefined);
    await system.stop();
  }
}

// pg-boss 10.4 on its own database: `send` for submissions; for
// consumption either our claim loops around `fetch` + `complete` (no pause
// between fetches: pg-boss's own database work) or its `work()` workers,
// which wait out their polling interval (0.5 s, the minimum) after each
// fetch, however full the queue. Constructor options are pg-boss's defaults
// but for the pool size (`max`, callers + 4). `send` carries no
// deduplication key (pg-boss's singletonKey is a different contract), which
// only flatters pg-boss.
//
// `worker(name, {concurrency, handler})`, for the fixed-rate scenario: one
// `work()` of batchSize `concurrency` (each call hands the handler up to
// that many jobs, run at once), polling 0.5 s (the minimum), and the
// handler calls `notifyWorker(id)` as it starts, so a worker that got jobs
// fetches again as soon as they are done instead of sleeping out the
// interval (an empty fetch still sleeps 0.5 s). `pendingJobs` and `ledger`
// read pgboss.job from the orchestrator, after the fact.
import PgBoss from 'pg-boss';
import pg from 'pg';
import { pollPause, runClaimLoops } from '../load/claim-loops.mjs';
import { jobInput } from '../load/jobs.mjs';
import { settlementWatch } from '../load/settled.mjs';
import { wallClock } from '../generators/protocol.mjs';
import { query } from '../postgres.mjs';

const IDLE_MS = 10;
const WORK_POLLING_SECONDS = 0.5;
const INSERT_BATCH = 1000;

const startBoss = async (databaseUrl, max, onError = (error) => console.error(`pg-boss: ${error.message}`)) => {
  const boss = new PgBoss({ connectionString: databaseUrl, max });
  boss.on('error', onError);
  await boss.start();
  return boss;
};

/** Parent side, once per run: installs pg-boss's schema. */
export async function prepare(databaseUrl) {
  const boss = await startBoss(databaseUrl, 2);
  await boss.stop({ graceful: false, wait: true });
}

/** Parent side: how many jobs of queue `name` are not completed (yet). */
export async function pendingJobs(databaseUrl, name) {
  const [row] = await query(databaseUrl, `select count(*)::int as pending from pgboss.job where name = $1 and state <> 'completed'`, [name]);
  return row.pending;
}

/**
 * Parent side: every job of queue `name` as {id, done, doneAt (epoch ms of
 * its completion), attempts, where: 'done', 'queued' (created, or waiting
 * for a retry), 'running' (active) or 'other'}.
 */
export async function ledger(databaseUrl, name) {
  const rows = await query(
    databaseUrl,
    `select id, state = 'completed' as done, extract(epoch from completed_on) * 1000 as "doneAt", retry_count + 1 as attempts,
            case when state = 'completed' then 'done' when state in ('created', 'retry') then 'queued' when state = 'active' then 'running' else 'other' end as "where"
       from pgboss.job where name = $1`,
    [name],
  );
  return rows.map((row) => ({ ...row, doneAt: row.doneAt === null ? undefined : Number(row.doneAt) }));
}

/**
 * `boss.createQueue(name)`, tried again after a deadlock: two generators
 * (fixed-rate's submitter and worker) create the same queue at once, and
 * pg-boss's createQueue can deadlock with itself (40P01) there.
 */
async function createQueueOnce(boss, name) {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await boss.createQueue(name);
    } catch (error) {
      if (error?.code !== '40P01' || attempt >= 5) throw error;
    }
  }
}

/**
 * Generator side: a started PgBoss with `connections` connections; `onError`
 * gets what it emits as 'error' (default: printed).
 */
export async function open(system, { connections, onError }) {
  const boss = await startBoss(system.databaseUrl, connections, onError);
  const created = new Set();
  const queue = async (name) => {
    if (!created.has(name)) await createQueueOnce(boss, name);
    created.add(name);
    return name;
  };
  return {
    options: { max: connections, otherwise: 'pg-boss defaults', workPollingIntervalSeconds: WORK_POLLING_SECONDS, fetchIdlePollMs: IDLE_MS },
    async submitter(name) {
      await queue(name);
      return (_key, input) => boss.send(name, input);
    },
    async bulkSubmitter(name) {
      await queue(name);
      return (_keys, inputs) => boss.insert(inputs.map((data) => ({ name, data })));
    },
    async seed(name, count) {
      await queue(name);
      for (let done = 0; done < count; done += INSERT_BATCH) {
        const batch = Array.from({ length: Math.min(INSERT_BATCH, count - done) }, (_, i) => ({ name, data: jobInput(done + i) }));
        await boss.insert(batch);
      }
    },
    async consumer(name, total, spec) {
      await queue(name);
      return spec.style === 'work' ? workConsumer(boss, system.databaseUrl, name, total, spec) : fetchConsumer(boss, name, total, spec);
    },
    async worker(name, { concurrency, handler }) {
      await queue(name);
      let id;
      id = await boss.work(name, { batchSize: concurrency, pollingIntervalSeconds: WORK_POLLING_SECONDS }, async (jobs) => {
        if (id) boss.notifyWorker(id);
        await Promise.all(jobs.map((job) => handler(job.data)));
      });
      return {
        stop: () => boss.offWork(name),
        notes: () => ({}),
        options: { work: `1 worker, batchSize ${concurrency}, pollingIntervalSeconds ${WORK_POLLING_SECONDS}, notifyWorker(id) on every batch`, max: connections },
      };
    },
    close: () => boss.stop({ graceful: false, wait: true, timeout: 5_000 }),
  };
}

/** Our claim loops around fetch + complete. */
function fetchConsumer(boss, name, total, spec) {
  return {
    run: () =>
      runClaimLoops({
        total,
        spec,
        claim: (_, batchSize) => boss.fetch(name, { batchSize }),
        complete: (job) => boss.complete(name, job.id),
        idle: pollPause(IDLE_MS),
      }),
  };
}

/** `spec.workers` pg-boss workers of `spec.batchSize`; done when the database shows every job completed. */
async function workConsumer(boss, databaseUrl, name, total, spec) {
  const counter = new pg.Client({ connectionString: databaseUrl });
  await counter.connect();
  const watch = settlementWatch(total, async () => {
    const { rows } = await counter.query(`select count(*)::int as done from pgboss.job where name = $1 and state = 'completed'`, [name]);
    return rows[0].done >= total;
  });
  return {
    async run() {
      const startedAt = wallClock();
      for (let index = 0; index < spec.workers; index += 1) {
        await boss.work(name, { batchSize: spec.batchSize, pollingIntervalSeconds: WORK_POLLING_SECONDS }, async (jobs) => {
          for (const _ of jobs) watch.handled();
        });
      }
      const endedAt = await watch.settledAt();
      await boss.offWork(name);
      await counter.end();
      return { count: total, startedAt, endedAt, latencies: [] };
    },
  };
}

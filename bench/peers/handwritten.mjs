// The hand-written node-postgres shapes: what a careful engineer writes
// directly against PostgreSQL, the yardstick for every Docket ratio.
//
// - submit, shape `insert`: one idempotent `INSERT ... ON CONFLICT DO NOTHING`
//   on a unique key;
// - submit, shape `cte`: the job and its first event in one statement (a
//   data-modifying CTE), the closest plain-SQL twin of SubmitJob;
// - bulk submit: the same for a whole batch in one statement (`unnest` of
//   the keys and inputs), the twin of SubmitJobs;
// - claim: `UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED LIMIT n)
//   RETURNING` taking a 30 s lease and bumping the attempt (the fence);
// - complete: one fenced `UPDATE` (same job, same attempt, still running).
//
// Named (prepared) statements on a pg.Pool of callers + 4 connections. An
// empty claim pauses 10 ms before the next poll (no LISTEN/NOTIFY).
import pg from 'pg';
import { pollPause, runClaimLoops } from '../load/claim-loops.mjs';

const SCHEMA = `
  create table if not exists jobs (
    id bigint generated always as identity primary key,
    queue text not null,
    idempotency_key text not null unique,
    input jsonb not null,
    status text not null default 'queued',
    priority int not null default 0,
    run_after timestamptz not null default now(),
    attempt int not null default 0,
    lease_expires_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  );
  create index if not exists jobs_claimable on jobs (queue, priority desc, id) where status = 'queued';
  create table if not exists job_events (
    job_id bigint not null references jobs (id),
    sequence int not null,
    type text not null,
    payload jsonb not null,
    created_at timestamptz not null default now(),
    primary key (job_id, sequence)
  );`;

const INSERT = `insert into jobs (queue, idempotency_key, input) values ($1, $2, $3) on conflict (idempotency_key) do nothing`;
const INSERT_WITH_EVENT = `
  with job as (
    insert into jobs (queue, idempotency_key, input) values ($1, $2, $3)
    on conflict (idempotency_key) do nothing returning id
  )
  insert into job_events (job_id, sequence, type, payload) select id, 1, 'job.admitted', $3 from job`;
const BULK_INSERT_WITH_EVENTS = `
  with job as (
    insert into jobs (queue, idempotency_key, input)
    select $1, key, input from unnest($2::text[], $3::jsonb[]) as item(key, input)
    on conflict (idempotency_key) do nothing returning id, input
  )
  insert into job_events (job_id, sequence, type, payload) select id, 1, 'job.admitted', input from job`;
const CLAIM = `
  update jobs set status = 'running', attempt = attempt + 1,
         lease_expires_at = now() + interval '30 seconds', updated_at = now()
   where id in (select id from jobs
                 where queue = $1 and status = 'queued' and run_after <= now()
                 order by priority desc, id
                 limit $2 for update skip locked)
  returning id, attempt, input`;
const COMPLETE = `
  update jobs set status = 'succeeded', lease_expires_at = null, updated_at = now()
   where id = $1 and attempt = $2 and status = 'running'`;
const SEED = `
  insert into jobs (queue, idempotency_key, input)
  select $1, $2 || '-' || g, jsonb_build_object('index', g, 'note', repeat('x', 100))
    from generate_series(1, $3::int) as g`;

const IDLE_MS = 10;

/** Parent side, once per run: the tables. */
export async function prepare(databaseUrl) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(SCHEMA);
  } finally {
    await client.end();
  }
}

/** Generator side: a driver on a pool of `connections`. */
export async function open(system, { connections }) {
  const pool = new pg.Pool({ connectionString: system.databaseUrl, max: connections });
  const statement = (name, text) => (values) => pool.query({ name, text, values });
  const insert = statement('bench_insert', INSERT);
  const insertWithEvent = statement('bench_insert_with_event', INSERT_WITH_EVENT);
  const claim = statement('bench_claim', CLAIM);
  const complete = statement('bench_complete', COMPLETE);
  return {
    options: { pool: connections, preparedStatements: true, idlePollMs: IDLE_MS },
    submitter(queue, shape) {
      const write = shape === 'cte' ? insertWithEvent : insert;
      return (key, input) => write([queue, key, input]);
    },
    bulkSubmitter(queue) {
      const write = statement('bench_bulk_insert_with_events', BULK_INSERT_WITH_EVENTS);
      return (keys, inputs) => write([queue, keys, inputs.map((input) => JSON.stringify(input))]);
    },
    async seed(queue, count, prefix) {
      for (let done = 0; done < count; done += 50_000) {
        await pool.query(SEED, [queue, `${prefix}-${done}`, Math.min(50_000, count - done)]);
      }
    },
    consumer: (queue, total, spec) => ({
      run: () =>
        runClaimLoops({
          total,
          spec,
          claim: async (_, maxJobs) => (await claim([queue, maxJobs])).rows,
          complete: (job) => complete([job.id, job.attempt]),
          idle: pollPause(IDLE_MS),
        }),
    }),
    close: () => pool.end(),
  };
}

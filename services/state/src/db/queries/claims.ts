import { sql } from 'kysely';
import type pg from 'pg';
import type { Queryable } from '../database.js';
import { PreparedStatement } from '../prepared-statement.js';
import type { JobRow } from './jobs.js';

const LOCK_LIMITED_QUEUES = new PreparedStatement<{ queue: string }>(
  'docket_lock_limited_queues',
  `select queue, pg_advisory_xact_lock(hashtextextended('docket.queue:' || queue, 0)) as locked
   from (select queue from queue_settings where queue = any($1::text[]) order by queue) limited`,
);

/**
 * Takes a transaction-scoped advisory lock for each of `queues` that has a
 * deployment-wide `max_concurrency`, in name order (so claimers never
 * deadlock), and returns those queues: concurrent claimers of a limited
 * queue count its running jobs one after another. (Volatile functions in
 * the select list run after the subquery's ORDER BY.)
 *
 * ```sql
 * select queue, pg_advisory_xact_lock(hashtextextended('docket.queue:' || queue, 0))
 * from (select queue from queue_settings where queue = any($1) order by queue) limited
 * ```
 */
export async function lockLimitedQueues(client: pg.ClientBase, queues: readonly string[]): Promise<string[]> {
  if (queues.length === 0) return [];
  return (await LOCK_LIMITED_QUEUES.run(client, [[...new Set(queues)]])).map((row) => row.queue);
}

const CLAIM_CAPACITY = new PreparedStatement<{ held: Record<string, number> | null; remaining: Record<string, number> | null }>(
  'docket_claim_capacity',
  `select
     (select json_object_agg(current_worker_incarnation, held) from (
        select current_worker_incarnation, count(*) as held from jobs
        where current_worker_incarnation = any($1::text[]) and status in ('RUNNING', 'CANCELLING')
        group by current_worker_incarnation) h) as held,
     (select json_object_agg(queue, remaining) from (
        select s.queue, s.max_concurrency - (select count(*) from jobs j
                                             where j.queue = s.queue and j.status in ('RUNNING', 'CANCELLING')) as remaining
        from queue_settings s where s.queue = any($2::text[])) r) as remaining`,
);

/** What claimers may still take: running jobs held per incarnation, free slots per limited queue. */
export interface ClaimCapacity {
  readonly held: ReadonlyMap<string, number>;
  readonly remaining: ReadonlyMap<string, number>;
}

/**
 * Running jobs (RUNNING or CANCELLING) held by each of `incarnations`, and
 * how many more each of the `limited` queues may run deployment-wide. Run
 * after the incarnation and queue locks, in a statement of its own, so it
 * counts every claim committed before them.
 *
 * ```sql
 * select count(*) from jobs where current_worker_incarnation = any($1) and status in ('RUNNING', 'CANCELLING') group by 1;
 * select s.queue, s.max_concurrency - count(running jobs of s.queue) from queue_settings s where s.queue = any($2)
 * ```
 */
export async function readClaimCapacity(client: pg.ClientBase, incarnations: readonly string[], limited: readonly string[]): Promise<ClaimCapacity> {
  const [row] = await CLAIM_CAPACITY.run(client, [[...new Set(incarnations)], [...limited]]);
  const counts = (object: Record<string, number> | null | undefined) => new Map(Object.entries(object ?? {}).map(([key, value]) => [key, Number(value)]));
  return { held: counts(row?.held), remaining: counts(row?.remaining) };
}

const LOCK_CLAIMABLE = new PreparedStatement<JobRow>(
  'docket_lock_claimable',
  `select * from jobs
   where status = 'QUEUED' and queue = any($1::text[]) and (run_after is null or run_after <= now())
     and id <> all($3::text[])
   order by priority desc, created_at, id
   limit $2
   for update skip locked`,
);

/**
 * Claimable jobs of `queues`, highest priority then oldest, locked and
 * skipping rows other claimers hold, so no job is handed to two claimers;
 * `taken` are rows this transaction already holds for other claims.
 *
 * ```sql
 * select * from jobs
 * where status = 'QUEUED' and queue = any($1) and (run_after is null or run_after <= now()) and id <> all($3)
 * order by priority desc, created_at, id limit $2 for update skip locked
 * ```
 */
export async function lockClaimableJobs(
  client: pg.ClientBase,
  queues: readonly string[],
  limit: number,
  taken: readonly string[],
): Promise<JobRow[]> {
  if (queues.length === 0 || limit <= 0) return [];
  return LOCK_CLAIMABLE.run(client, [[...queues], limit, [...taken]]);
}

/**
 * Locks the running jobs that any of `incarnations` holds.
 *
 * ```sql
 * select * from jobs where current_worker_incarnation = any($1)
 *   and status in ('RUNNING', 'CANCELLING') order by id for update
 * ```
 */
export async function lockJobsHeldBy(db: Queryable, incarnations: readonly string[]): Promise<JobRow[]> {
  if (incarnations.length === 0) return [];
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('current_worker_incarnation', 'in', [...incarnations])
    .where('status', 'in', ['RUNNING', 'CANCELLING'])
    .orderBy('id')
    .forUpdate()
    .execute();
}

const NEXT_RUN_AFTER = new PreparedStatement<{ due: Date | null }>(
  'docket_next_run_after',
  `select min(run_after) as due from jobs where status = 'QUEUED' and queue = any($1::text[]) and run_after > now()`,
);

/**
 * The earliest future `run_after` among queued jobs of `queues`.
 *
 * ```sql
 * select min(run_after) from jobs where status = 'QUEUED' and queue = any($1) and run_after > now()
 * ```
 */
export async function nextRunAfter(client: pg.ClientBase, queues: readonly string[]): Promise<Date | undefined> {
  if (queues.length === 0) return undefined;
  const [row] = await NEXT_RUN_AFTER.run(client, [[...queues]]);
  return row?.due ?? undefined;
}

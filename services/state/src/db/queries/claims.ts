import { sql } from 'kysely';
import type { Queryable } from '../database.js';
import type { JobRow } from './jobs.js';

/**
 * Running jobs (RUNNING or CANCELLING) held by an incarnation.
 *
 * ```sql
 * select count(*) from jobs where current_worker_incarnation = $1 and status in ('RUNNING', 'CANCELLING')
 * ```
 */
export async function countHeldJobs(db: Queryable, incarnation: string): Promise<number> {
  const row = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<string>().as('held'))
    .where('current_worker_incarnation', '=', incarnation)
    .where('status', 'in', ['RUNNING', 'CANCELLING'])
    .executeTakeFirstOrThrow();
  return Number(row.held);
}

/**
 * How many more jobs each of `queues` may run deployment-wide, for the
 * queues that have a `max_concurrency`. Takes a transaction-scoped advisory
 * lock per limited queue first (in name order, so claimers never deadlock),
 * so that concurrent claimers of a limited queue count one after another.
 *
 * ```sql
 * select pg_advisory_xact_lock(hashtextextended('docket.queue:' || queue, 0)) ...;
 * select s.queue, s.max_concurrency - count(j.id) as remaining from queue_settings s
 *   left join jobs j on j.queue = s.queue and j.status in ('RUNNING', 'CANCELLING')
 * where s.queue = any($1) group by s.queue, s.max_concurrency
 * ```
 */
export async function lockQueueCapacity(db: Queryable, queues: readonly string[]): Promise<Map<string, number>> {
  const limited = await db.selectFrom('queue_settings').select('queue').where('queue', 'in', [...queues]).orderBy('queue').execute();
  for (const { queue } of limited) {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`docket.queue:${queue}`}, 0))`.execute(db);
  }
  if (limited.length === 0) return new Map();
  const rows = await sql<{ queue: string; remaining: string }>`
    select s.queue, s.max_concurrency - count(j.id) as remaining
    from queue_settings s
    left join jobs j on j.queue = s.queue and j.status in ('RUNNING', 'CANCELLING')
    where s.queue = any(${limited.map((row) => row.queue)}::text[])
    group by s.queue, s.max_concurrency`.execute(db);
  return new Map(rows.rows.map((row) => [row.queue, Number(row.remaining)]));
}

/**
 * Claimable jobs, highest priority then oldest, locked and skipping rows
 * other claimers hold, so no job is handed to two claimers.
 *
 * ```sql
 * select * from jobs
 * where status = 'QUEUED' and queue = any($1) and (run_after is null or run_after <= now())
 * order by priority desc, created_at, id limit $2 for update skip locked
 * ```
 */
export async function lockClaimableJobs(db: Queryable, queues: readonly string[], limit: number): Promise<JobRow[]> {
  if (queues.length === 0 || limit <= 0) return [];
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('status', '=', 'QUEUED')
    .where('queue', 'in', [...queues])
    .where((eb) => eb.or([eb('run_after', 'is', null), eb('run_after', '<=', sql<Date>`now()`)]))
    .orderBy('priority', 'desc')
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute();
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

/**
 * The earliest future `run_after` among queued jobs of `queues`.
 *
 * ```sql
 * select min(run_after) from jobs where status = 'QUEUED' and queue = any($1) and run_after > now()
 * ```
 */
export async function nextRunAfter(db: Queryable, queues: readonly string[]): Promise<Date | undefined> {
  if (queues.length === 0) return undefined;
  const row = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.min<Date | null>('run_after').as('due'))
    .where('status', '=', 'QUEUED')
    .where('queue', 'in', [...queues])
    .where('run_after', '>', sql<Date>`now()`)
    .executeTakeFirst();
  return row?.due ?? undefined;
}

import type pg from 'pg';
import type { Queryable } from '../database.js';
import { jsonParameter } from '../json-parameter.js';
import { PreparedStatement } from '../prepared-statement.js';
import type { OpeningStatement } from '../write-transaction.js';
import { claimOrder, holdsASlot, isClaimable, rateTokensNow } from './claimability.js';
import type { JobRow } from './jobs.js';
import { elementsOf } from './rows-by-key.js';

const LOCK_CLAIM_QUEUES = new PreparedStatement<{ limited: string[] | null; held: Record<string, bigint | number> | null }>(
  'docket_lock_claim_queues',
  `select
     (select json_agg(queue) from (
        select queue, pg_advisory_xact_lock(hashtextextended('docket.queue:' || queue, 0)) as locked
        from (select queue from queue_settings
              where queue in (
                select q.queue from json_to_recordset($1::json) as c(incarnation text, queues text[])
                join worker_incarnations w on w.id = c.incarnation
                cross join lateral unnest(case when cardinality(c.queues) = 0 then w.queues else c.queues end) as q(queue))
              order by queue) ordered) limited) as limited,
     (select json_object_agg(w.id, (select count(*) from jobs where current_worker_incarnation = w.id and ${holdsASlot('jobs')}))
        from ${elementsOf('$2')} as w(id)) as held`,
);

/** One claim of a batch as {@link claimQueuesStatement} sees it: its incarnation and the queues it names (none: all its incarnation's). */
export interface ClaimScope {
  readonly incarnation: string;
  readonly queues: readonly string[];
}

/** The queues of a claim batch that have a deployment-wide bound (now locked), and the running jobs each incarnation holds. */
export interface LockedQueues {
  readonly limited: readonly string[];
  readonly held: ReadonlyMap<string, number>;
}

/**
 * The second opening read of a claim batch, run after the first locked its
 * incarnations (`claimContextStatement`; a statement of its own, so its
 * snapshot sees every claim that committed while that lock was awaited):
 * takes a transaction-scoped advisory lock for each of the claims' queues
 * that has a `queue_settings` row, in name order (so claimers never
 * deadlock; volatile functions in a select list run after the subquery's
 * ORDER BY), and counts the running jobs (RUNNING or CANCELLING) each
 * incarnation holds. A claim's queues are those it names or, naming none,
 * all its incarnation's; a claim refused afterwards (a stale incarnation,
 * a replay, a queue it did not register) only held a lock it did not need.
 *
 * ```sql
 * select queue, pg_advisory_xact_lock(hashtextextended('docket.queue:' || queue, 0))
 *   from (select queue from queue_settings where queue in (<the claims' queues>) order by queue) ordered;
 * select w.id, (select count(*) from jobs where current_worker_incarnation = w.id and status in ('RUNNING', 'CANCELLING'))
 *   from json_array_elements_text($2) as w(id)
 * ```
 *
 * Each incarnation's count is a subquery of its own, with `=` rather than
 * `= any($2)`: so the cached generic plan reads `jobs_held_by` with an
 * index(-only) scan, which marks the entries of rows no longer running as
 * dead as it passes them, and the next batch skips them. Grouped over
 * `= any($2)`, the generic plan was a bitmap scan, which marks nothing: a
 * claim batch visited one entry and heap tuple for every job its
 * incarnation had claimed since the table's last vacuum (2,512 entries
 * and 347 heap pages, 2.4 ms, 4,000 jobs into a run; 0.2 ms and then
 * 0.03 ms once the scan had marked them).
 */
export function claimQueuesStatement(claims: readonly ClaimScope[]): OpeningStatement {
  return { statement: LOCK_CLAIM_QUEUES, values: [jsonParameter(claims), jsonParameter([...new Set(claims.map((claim) => claim.incarnation))])] };
}

/** What {@link claimQueuesStatement} read. */
export function lockedQueuesOf(rows: readonly unknown[] | undefined): LockedQueues {
  const [row] = (rows ?? []) as { limited: string[] | null; held: Record<string, bigint | number> | null }[];
  return { limited: row?.limited ?? [], held: new Map(Object.entries(row?.held ?? {}).map(([id, held]) => [id, Number(held)])) };
}

const QUEUE_ROOM = new PreparedStatement<{
  queue: string;
  remaining: bigint | null;
  tokens: number | null;
  rate_jobs: number | null;
  rate_per_ms: bigint | null;
  paused: boolean;
  per_key_concurrency: number | null;
}>(
  'docket_queue_room',
  `select s.queue, s.paused, s.rate_jobs, s.rate_per_ms, s.per_key_concurrency, b.tokens,
          case when s.paused then 0 else least(
            case when s.max_concurrency is null then null else s.max_concurrency - (
              select count(*) from jobs j where j.queue = s.queue and ${holdsASlot('j')}) + coalesce(($2::json ->> s.queue)::bigint, 0) end,
            floor(b.tokens)::bigint) end as remaining
   from queue_settings s
   cross join lateral (select ${rateTokensNow('s')} as tokens) b
   where s.queue = any($1::text[])`,
);

/** What a configured queue allows a claim batch now. */
export interface QueueRoom {
  /** More jobs the queue may start now: its free concurrency, whole tokens, 0 when paused; undefined for no bound. */
  readonly remaining: number | undefined;
  /** Its rate limit's bucket now (fractional tokens), if it has one. */
  readonly bucket: { readonly tokens: number; readonly jobs: number; readonly perMs: number } | undefined;
  readonly paused: boolean;
  /** Running attempts allowed per concurrency key, claims rotating across keys; undefined: keys not limited. */
  readonly perKey: number | undefined;
}

/**
 * What each of the `limited` queues (those with a `queue_settings` row)
 * allows now: free `max_concurrency` slots deployment-wide, the whole
 * tokens of its rate limit's bucket (refilled by the database clock since
 * it was last spent, never above `rate_jobs`), none while paused. Run after
 * their advisory locks, in a statement of its own, so it counts every
 * claim committed before them. `freed` are the slots per queue that this
 * transaction's own reports give up (`FreedSlots`): still running in the
 * rows the statement counts, free once the transaction commits.
 *
 * ```sql
 * select s.queue, case when s.paused then 0 else least(
 *          s.max_concurrency - (select count(*) from jobs j where j.queue = s.queue and j.status in ('RUNNING', 'CANCELLING')) + <freed>,
 *          floor(least(rate_jobs, coalesce(rate_tokens, rate_jobs) + elapsed_ms * rate_jobs / rate_per_ms))) end
 * from queue_settings s where s.queue = any($1)
 * ```
 */
export async function readQueueRoom(client: pg.ClientBase, limited: readonly string[], freed: ReadonlyMap<string, number>): Promise<Map<string, QueueRoom>> {
  if (limited.length === 0) return new Map();
  return new Map(
    (await QUEUE_ROOM.run(client, [[...limited], jsonParameter(Object.fromEntries(freed))])).map((row) => [
      row.queue,
      {
        remaining: row.remaining === null ? undefined : Math.max(0, Number(row.remaining)),
        bucket: row.tokens === null ? undefined : { tokens: row.tokens, jobs: row.rate_jobs!, perMs: Number(row.rate_per_ms) },
        paused: row.paused,
        perKey: row.per_key_concurrency ?? undefined,
      },
    ]),
  );
}

const SPEND_TOKENS = new PreparedStatement<never>(
  'docket_spend_rate_tokens',
  `update queue_settings s set rate_tokens = u.tokens, rate_refilled_at = now()
   from unnest($1::text[], $2::float8[]) as u(queue, tokens) where s.queue = u.queue`,
);

/**
 * Stores rate-limited queues' buckets after a claim batch spent from them
 * (`tokens`: what is left, as of the transaction's clock), under the
 * queues' advisory locks.
 *
 * ```sql
 * update queue_settings s set rate_tokens = u.tokens, rate_refilled_at = now()
 *   from unnest($1, $2) u(queue, tokens) where s.queue = u.queue
 * ```
 */
export async function spendRateTokens(client: pg.ClientBase, tokens: ReadonlyMap<string, number>): Promise<void> {
  if (tokens.size === 0) return;
  await SPEND_TOKENS.run(client, [[...tokens.keys()], [...tokens.values()]]);
}

/** A claimable job of a keyed queue, with its rotation member: its key ('' for none), when that key was last served, and its room. */
export type KeyedCandidate = JobRow & { readonly member: string; readonly member_served_at: Date | null; readonly member_room: bigint };

const LOCK_KEYED_CLAIMABLE = new PreparedStatement<KeyedCandidate>(
  'docket_lock_keyed_claimable',
  `with running as (
     select coalesce(concurrency_key, '') as member, count(*) as running from jobs
     where queue = $1 and ${holdsASlot('jobs')} group by 1
   ),
   members as (
     select k.concurrency_key as member, k.served_at from queue_keys k where k.queue = $1 and k.concurrency_key <> ''
     union all
     select '', (select served_at from queue_keys where queue = $1 and concurrency_key = '')
   ),
   rooms as (
     select m.member, m.served_at, greatest(0, $2 - coalesce(r.running, 0)) as room
     from members m left join running r using (member)
   )
   select j.*, r.member, r.served_at as member_served_at, r.room as member_room from rooms r
   cross join lateral (
     select * from jobs
     where ${isClaimable('jobs')} and queue = $1 and concurrency_key = r.member and id <> all($3::text[])
     order by concurrency_key, ${claimOrder('jobs')}
     limit least(r.room, $4)
     for update skip locked
   ) j
   where r.member <> '' and r.room > 0
   union all
   select j.*, '', r.served_at, r.room from rooms r
   cross join lateral (
     select * from jobs
     where ${isClaimable('jobs')} and queue = $1 and concurrency_key is null and id <> all($3::text[])
     order by ${claimOrder('jobs')}
     limit least(r.room, $4)
     for update skip locked
   ) j
   where r.member = '' and r.room > 0`,
);

/**
 * The claimable jobs of a keyed queue (its policy sets
 * `per_key_concurrency`): for every key the queue has had (`queue_keys`)
 * that is below the limit, and for its jobs without a key (the empty key),
 * at most its room and at most `limit` of its first jobs (highest priority,
 * then oldest), locked with SKIP LOCKED; `taken` as in
 * {@link lockClaimableJobs}. Run under the queue's advisory lock, so the
 * running counts hold until the claim commits. The caller rotates across
 * the members (see `rotateAcrossKeys`).
 *
 * ```sql
 * with running as (select coalesce(concurrency_key, '') member, count(*) from jobs where queue = $1 and status in ('RUNNING', 'CANCELLING') group by 1),
 *      members as (select concurrency_key, served_at from queue_keys where queue = $1 union all <the empty key>)
 * select j.*, member, served_at, room from members cross join lateral (
 *   select * from jobs where status = 'QUEUED' and queue = $1 and concurrency_key = member ... limit least(room, $4) for update skip locked) j
 * ```
 */
export async function lockKeyedClaimableJobs(client: pg.ClientBase, queue: string, perKey: number, limit: number, taken: readonly string[]): Promise<KeyedCandidate[]> {
  if (limit <= 0) return [];
  return LOCK_KEYED_CLAIMABLE.run(client, [queue, perKey, [...taken], limit]);
}

const SERVE_KEYS = new PreparedStatement<never>(
  'docket_serve_queue_keys',
  `insert into queue_keys (queue, concurrency_key, served_at)
   select queue, concurrency_key, now() from unnest($1::text[], $2::text[]) as u(queue, concurrency_key)
   on conflict (queue, concurrency_key) do update set served_at = excluded.served_at`,
);

/**
 * Records that a claim served these keys of keyed queues ('' for the jobs
 * without a key): the rotation serves the key served longest ago first.
 *
 * ```sql
 * insert into queue_keys (queue, concurrency_key, served_at) select ..., now() from unnest($1, $2)
 *   on conflict (queue, concurrency_key) do update set served_at = excluded.served_at
 * ```
 */
export async function serveQueueKeys(client: pg.ClientBase, served: readonly { readonly queue: string; readonly key: string }[]): Promise<void> {
  if (served.length === 0) return;
  await SERVE_KEYS.run(client, [served.map((item) => item.queue), served.map((item) => item.key)]);
}

const LOCK_CLAIMABLE = new PreparedStatement<JobRow>(
  'docket_lock_claimable_by_queue',
  `select j.* from ${elementsOf('$1')} as q(queue)
   cross join lateral (
     select * from jobs
     where ${isClaimable('jobs')} and queue = q.queue and id <> all($3::text[])
     order by ${claimOrder('jobs')}
     limit $2
     for update skip locked
   ) j
   order by j.priority desc, j.created_at, j.id
   limit $2`,
);

/**
 * Claimable jobs of `queues`, highest priority then oldest, locked and
 * skipping rows other claimers hold, so no job is handed to two claimers;
 * `taken` are rows this transaction already holds for other claims. Each
 * queue is read on its own through `jobs_claimable` (queue, priority desc,
 * created_at, id), so the index order serves the ORDER BY and the scan
 * stops after `limit` rows whatever the backlog (one `queue = any(...)`
 * scan reads and sorts every queued job of the queues).
 *
 * ```sql
 * select j.* from json_array_elements_text($1) q(queue) cross join lateral (
 *   select * from jobs where status = 'QUEUED' and queue = q.queue and (run_after is null or run_after <= now())
 *     and id <> all($3) and not exists (select 1 from job_quarantine x where x.job_id = jobs.id)
 *     order by priority desc, created_at, id limit $2 for update skip locked) j
 * order by j.priority desc, j.created_at, j.id limit $2
 * ```
 */
export async function lockClaimableJobs(
  client: pg.ClientBase,
  queues: readonly string[],
  limit: number,
  taken: readonly string[],
): Promise<JobRow[]> {
  if (queues.length === 0 || limit <= 0) return [];
  return LOCK_CLAIMABLE.run(client, [jsonParameter(queues), limit, [...taken]]);
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

import { PreparedStatement, type StatementTarget } from '../prepared-statement.js';
import { jobRowFromJson } from '../json-rows.js';
import type { JobRow, Viewer } from './jobs.js';
import { holdsASlot, isAheadInClaimOrder, isClaimable, rateTokensNow } from './claimability.js';
import { workerStateOf } from './workers.js';

/**
 * How many claimable jobs ahead ExplainJob counts at most: the count stays
 * cheap however deep the queue (each counted job is an index entry and a
 * heap check), and past a hundred the answer a job page needs is "at least
 * 100 ahead", not the exact place.
 */
export const JOBS_AHEAD_COUNTED = 100;

/** Everything ExplainJob decides from, read in one statement (one snapshot, one clock). */
export interface JobClaimability {
  readonly job: JobRow;
  /** The database clock of the read. */
  readonly now: Date;
  /** The feed's horizon in the read's snapshot (its xmin): any change the read does not show lies at or after it. */
  readonly horizon: bigint;
  readonly quarantine: { readonly task: string; readonly errorClass: string; readonly since: Date } | undefined;
  /** The parents that have not settled, in the job's parent order. */
  readonly pendingParents: readonly string[];
  /** The queue's policy row, if it has one. */
  readonly queue:
    | {
        readonly paused: boolean;
        readonly maxConcurrency: number | undefined;
        readonly perKeyConcurrency: number | undefined;
        readonly rate: { readonly jobs: number; readonly perMs: number; readonly tokens: number } | undefined;
        /** Jobs of the queue holding a slot (counted only under a max_concurrency). */
        readonly running: number | undefined;
        /** Jobs of the job's concurrency key holding a slot (counted only under a per_key_concurrency). */
        readonly keyRunning: number | undefined;
      }
    | undefined;
  /** Claimable jobs before it in claim order (within its key on a keyed queue), up to {@link JOBS_AHEAD_COUNTED} + 1; 0 unless it is QUEUED. */
  readonly jobsAhead: number;
  /** Whether a LIVE worker incarnation is registered for the job's queue. */
  readonly liveWorker: boolean;
}

interface ExplainRow {
  job: Record<string, unknown>;
  now: Date;
  horizon: string;
  quarantine_task: string | null;
  quarantine_error_class: string | null;
  quarantined_at: Date | null;
  has_policy: boolean;
  paused: boolean | null;
  max_concurrency: number | null;
  per_key_concurrency: number | null;
  rate_jobs: number | null;
  rate_per_ms: bigint | null;
  rate_tokens: number | null;
  queue_running: bigint | null;
  key_running: bigint | null;
  jobs_ahead: bigint;
  live_worker: boolean;
  pending_parents: string[];
}

const KEY_OF_AHEAD = `(s.per_key_concurrency is null or coalesce(a.concurrency_key, '') = coalesce(j.concurrency_key, ''))`;

/** $1 the job id, $2 whether the viewer is an admin, $3 its subject, $4 the lease in ms. */
const READ_JOB_CLAIMABILITY = new PreparedStatement<ExplainRow>(
  'docket_read_job_claimability',
  `select to_json(j) as job, now() as now, pg_snapshot_xmin(pg_current_snapshot())::text as horizon,
     q.task as quarantine_task, q.error_class as quarantine_error_class, q.quarantined_at,
     s.queue is not null as has_policy, s.paused, s.max_concurrency, s.per_key_concurrency, s.rate_jobs, s.rate_per_ms,
     ${rateTokensNow('s')} as rate_tokens,
     case when s.max_concurrency is null then null else
       (select count(*) from jobs r where r.queue = j.queue and ${holdsASlot('r')}) end as queue_running,
     case when s.per_key_concurrency is null then null else
       (select count(*) from jobs r where r.queue = j.queue and coalesce(r.concurrency_key, '') = coalesce(j.concurrency_key, '')
          and ${holdsASlot('r')}) end as key_running,
     case when j.status <> 'QUEUED' then 0 else (select count(*) from (select 1 from jobs a
        where a.queue = j.queue and ${isClaimable('a')} and ${isAheadInClaimOrder('a', 'j')} and ${KEY_OF_AHEAD}
        limit ${JOBS_AHEAD_COUNTED + 1}) ahead) end as jobs_ahead,
     exists (select 1 from worker_incarnations w where j.queue = any(w.queues) and ${workerStateOf('w', '$4')} = 'LIVE') as live_worker,
     case when j.pending_parent_count = 0 then '[]'::json else
       (select coalesce(json_agg(d.parent_job_id order by array_position(j.parent_ids, d.parent_job_id)), '[]'::json)
        from job_dependencies d where d.child_job_id = j.id and d.settled_status is null) end as pending_parents
   from jobs j
   left join job_quarantine q on q.job_id = j.id
   left join queue_settings s on s.queue = j.queue
   where j.id = $1 and ($2::boolean or j.owner = $3)`,
);

/**
 * A job the viewer may see (undefined for a missing or foreign one) with
 * what decides whether a claim would take it now: its quarantine, its
 * queue's policy with the running counts and the rate bucket, the
 * claimable jobs ahead of it, and whether a live worker serves the queue.
 * One read-only statement, prepared once per connection, built from the
 * claim statements' predicates (`claimability.ts`); each count is an index
 * scan (`jobs_claimable`, `jobs_running_by_key`), the jobs ahead capped at
 * {@link JOBS_AHEAD_COUNTED} + 1 rows.
 *
 * ```sql
 * select to_json(j), now(), pg_snapshot_xmin(pg_current_snapshot()), q.*, s.*, <tokens now>,
 *   (select count(*) from jobs r where r.queue = j.queue and r.status in ('RUNNING', 'CANCELLING')),
 *   (select count(*) from (select 1 from jobs a where a.queue = j.queue and <claimable a> and <a ahead of j> limit 101) x),
 *   exists (select 1 from worker_incarnations w where j.queue = any(w.queues) and <w LIVE>),
 *   (select json_agg(parent_job_id) from job_dependencies where child_job_id = j.id and settled_status is null)
 * from jobs j left join job_quarantine q on q.job_id = j.id left join queue_settings s on s.queue = j.queue
 * where j.id = $1 and (j.owner = $2 or <admin>)
 * ```
 */
export async function readJobClaimability(db: StatementTarget, viewer: Viewer, jobId: string, leaseMs: number): Promise<JobClaimability | undefined> {
  const [row] = await READ_JOB_CLAIMABILITY.run(db, [jobId, viewer.admin, viewer.subject, leaseMs]);
  if (!row) return undefined;
  return {
    job: jobRowFromJson(row.job),
    now: row.now,
    horizon: BigInt(row.horizon),
    quarantine:
      row.quarantined_at === null ? undefined : { task: row.quarantine_task ?? '', errorClass: row.quarantine_error_class ?? '', since: row.quarantined_at },
    queue: row.has_policy
      ? {
          paused: row.paused === true,
          maxConcurrency: row.max_concurrency ?? undefined,
          perKeyConcurrency: row.per_key_concurrency ?? undefined,
          rate: row.rate_jobs === null || row.rate_tokens === null ? undefined : { jobs: row.rate_jobs, perMs: Number(row.rate_per_ms), tokens: row.rate_tokens },
          running: row.queue_running === null ? undefined : Number(row.queue_running),
          keyRunning: row.key_running === null ? undefined : Number(row.key_running),
        }
      : undefined,
    jobsAhead: Number(row.jobs_ahead),
    liveWorker: row.live_worker,
    pendingParents: row.pending_parents,
  };
}

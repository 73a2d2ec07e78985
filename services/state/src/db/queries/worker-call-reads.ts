import type pg from 'pg';
import { PreparedStatement } from '../prepared-statement.js';
import type { JobRow } from './jobs.js';
import type { IncarnationRow } from './workers.js';
import type { WorkerOperationRow } from './worker-operations.js';

/** The (incarnation, operation id) of a worker call. */
export interface OperationKey {
  readonly worker_incarnation: string;
  readonly operation_id: string;
}

const READ_OPERATIONS = new PreparedStatement<WorkerOperationRow>(
  'docket_read_operations',
  `select o.* from json_to_recordset($1::json) as k(worker_incarnation text, operation_id text)
   join worker_operations o on o.worker_incarnation = k.worker_incarnation and o.operation_id = k.operation_id`,
);

/**
 * The responses recorded for any of `keys`, by `incarnation/operation`.
 *
 * ```sql
 * select o.* from <keys> k join worker_operations o using (worker_incarnation, operation_id)
 * ```
 */
export async function readOperations(client: pg.ClientBase, keys: readonly OperationKey[]): Promise<Map<string, WorkerOperationRow>> {
  const rows = keys.length === 0 ? [] : await READ_OPERATIONS.run(client, [JSON.stringify(keys)]);
  return new Map(rows.map((row) => [operationKeyOf(row), row]));
}

/** The map key of an operation. */
export function operationKeyOf(key: OperationKey): string {
  return `${key.worker_incarnation}/${key.operation_id}`;
}

const READ_INCARNATIONS = new PreparedStatement<IncarnationRow>(
  'docket_read_incarnations',
  'select * from worker_incarnations where id = any($1::text[])',
);

const LOCK_INCARNATIONS = new PreparedStatement<IncarnationRow>(
  'docket_lock_incarnations',
  'select * from worker_incarnations where id = any($1::text[]) order by id for update',
);

/**
 * Incarnations by id; `lock` takes their row locks (in id order), which
 * serialises claims against a registration that supersedes them.
 *
 * ```sql
 * select * from worker_incarnations where id = any($1) [order by id for update]
 * ```
 */
export async function readIncarnations(client: pg.ClientBase, ids: readonly string[], lock: boolean): Promise<Map<string, IncarnationRow>> {
  if (ids.length === 0) return new Map();
  const rows = await (lock ? LOCK_INCARNATIONS : READ_INCARNATIONS).run(client, [[...new Set(ids)]]);
  return new Map(rows.map((row) => [row.id, row]));
}

const LOCK_JOBS_OF_ATTEMPTS = new PreparedStatement<JobRow>(
  'docket_lock_jobs_of_attempts',
  `select j.* from jobs j
   where j.id in (select job_id from attempts where id = any($1::text[]))
     and j.lifecycle <> 'HARD_DELETED'
   order by j.id for update of j`,
);

/**
 * Locks the jobs the given attempts belong to, in id order (so batches
 * never deadlock one another), and returns them by id.
 *
 * ```sql
 * select * from jobs where id in (select job_id from attempts where id = any($1)) order by id for update
 * ```
 */
export async function lockJobsOfAttempts(client: pg.ClientBase, attemptIds: readonly string[]): Promise<Map<string, JobRow>> {
  if (attemptIds.length === 0) return new Map();
  const rows = await LOCK_JOBS_OF_ATTEMPTS.run(client, [[...new Set(attemptIds)]]);
  return new Map(rows.map((row) => [row.id, row]));
}

const READ_JOURNAL_HEADS = new PreparedStatement<{ job_id: string; sequence: string; hash: string }>(
  'docket_read_journal_heads',
  `select k.job_id, e.sequence, e.hash from unnest($1::text[]) as k(job_id)
   cross join lateral (select sequence, hash from job_events where job_id = k.job_id order by sequence desc limit 1) e`,
);

/**
 * The last stored journal event of each job, read after the job rows were
 * locked (in a statement of its own, so that it sees every event committed
 * before the locks were granted).
 *
 * ```sql
 * select k.job_id, e.sequence, e.hash from unnest($1) k(job_id)
 *   cross join lateral (select sequence, hash from job_events where job_id = k.job_id order by sequence desc limit 1) e
 * ```
 */
export async function readJournalHeads(client: pg.ClientBase, jobIds: readonly string[]): Promise<Map<string, { sequence: string; hash: string }>> {
  if (jobIds.length === 0) return new Map();
  const rows = await READ_JOURNAL_HEADS.run(client, [[...new Set(jobIds)]]);
  return new Map(rows.map((row) => [row.job_id, { sequence: row.sequence, hash: row.hash }]));
}

import { sql } from 'kysely';
import type pg from 'pg';
import type { Queryable } from '../database.js';
import { jsonParameter } from '../json-parameter.js';
import { PreparedStatement } from '../prepared-statement.js';

/** One job to quarantine: which job, what met it, the failure's class. */
export interface QuarantineEntry {
  readonly jobId: string;
  readonly task: string;
  readonly errorClass: string;
}

/**
 * The filter every background selection adds, so a quarantined job is
 * never taken again (`column` names the job id of the outer query):
 *
 * ```sql
 * not exists (select 1 from job_quarantine q where q.job_id = <column>)
 * ```
 */
export function notQuarantined(jobIdColumn: 'jobs.id' | 'deletions.job_id') {
  return sql<boolean>`not exists (select 1 from job_quarantine q where q.job_id = ${sql.ref(jobIdColumn)})`;
}

/**
 * Records a quarantine by the database clock, unless the job already has
 * one (another replica met it first); whether this call recorded it.
 *
 * ```sql
 * insert into job_quarantine (job_id, task, error_class, quarantined_at) values ($1, $2, $3, now())
 * on conflict (job_id) do nothing returning job_id
 * ```
 */
export async function recordQuarantine(db: Queryable, entry: QuarantineEntry): Promise<boolean> {
  const inserted = await db
    .insertInto('job_quarantine')
    .values({ job_id: entry.jobId, task: entry.task, error_class: entry.errorClass, quarantined_at: sql<Date>`now()` })
    .onConflict((conflict) => conflict.column('job_id').doNothing())
    .returning('job_id')
    .executeTakeFirst();
  return inserted !== undefined;
}

const RECORD_QUARANTINES = new PreparedStatement<{ job_id: string }>(
  'docket_record_quarantines',
  `insert into job_quarantine (job_id, task, error_class, quarantined_at)
   select job_id, task, error_class, now() from json_to_recordset($1::json) as q(job_id text, task text, error_class text)
   on conflict (job_id) do nothing
   returning job_id`,
);

/**
 * {@link recordQuarantine} for several jobs on a claim transaction's
 * connection; the ids this call recorded.
 *
 * ```sql
 * insert into job_quarantine (job_id, task, error_class, quarantined_at)
 *   select job_id, task, error_class, now() from json_to_recordset($1) ...
 * on conflict (job_id) do nothing returning job_id
 * ```
 */
export async function recordQuarantines(client: pg.ClientBase, entries: readonly QuarantineEntry[]): Promise<Set<string>> {
  if (entries.length === 0) return new Set();
  const rows = await RECORD_QUARANTINES.run(client, [
    jsonParameter(entries.map((entry) => ({ job_id: entry.jobId, task: entry.task, error_class: entry.errorClass }))),
  ]);
  return new Set(rows.map((row) => row.job_id));
}

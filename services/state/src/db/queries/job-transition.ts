import type { Insertable } from 'kysely';
import type { Queryable } from '../database.js';
import type { JobEventsTable } from '../tables/index.js';
import { jobChangeAnnounced, jobChangeOf } from './job-changes.js';
import { jobPatchColumns, type JobPatch, type NewJobRow } from './jobs.js';

/**
 * Writes one job's transition in one statement: appends its journal rows,
 * writes the changed columns of its row, records its feed entry and
 * announces it (after commit), where one statement each took four round
 * trips. The caller holds the row's lock in the same transaction, and
 * `job` is the row as changed (what the feed entry and the announcement
 * say). The parts are independent: none reads what another writes, so
 * PostgreSQL's running them side by side on one snapshot changes nothing;
 * the journal rows' foreign key is checked at the statement's end, against
 * the row as updated.
 *
 * ```sql
 * with appended as (insert into job_events (...) values (...), (...)),
 *      changed as (update jobs set <changed columns> where id = $1),
 *      entry as (insert into job_changes (...) values (...))
 * select pg_notify('docket_job_changes', '{"jobs":[[...]]}')
 * ```
 */
export async function writeJobTransition(db: Queryable, events: readonly Insertable<JobEventsTable>[], patch: JobPatch, job: NewJobRow): Promise<void> {
  // A transition appends at least one event (`planTransition` checks), and an insert of no rows is no statement.
  if (events.length === 0) throw new RangeError('a transition appends at least one event');
  await db
    .with('appended', (qc) => qc.insertInto('job_events').values([...events]))
    .with('changed', (qc) => qc.updateTable('jobs').set(jobPatchColumns(patch)).where('id', '=', job.id))
    .with('entry', (qc) => qc.insertInto('job_changes').values(jobChangeOf(job)))
    .selectNoFrom(jobChangeAnnounced(job))
    .execute();
}

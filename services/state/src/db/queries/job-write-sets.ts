import type pg from 'pg';
import type { JobWriteSet } from '../../transitions/job-write-set.js';
import type { JobRow } from './jobs.js';
import { jsonParameter } from '../json-parameter.js';
import { PreparedStatement, type StatementTarget } from '../prepared-statement.js';
import { JOB_CHANGES_CHANNEL, announcementOf } from './job-changes.js';
import { idsOf } from './rows-by-key.js';
import { SQLSTATE, sqlStateOf } from '../sqlstate.js';
import { runAndCommit } from '../write-transaction.js';

/**
 * Writes a whole {@link JobWriteSet} in one statement: every changed job
 * row (all mutable columns, from the row the batch computed under the row
 * lock), the journal rows, attempts begun and ended, feed entries and
 * recorded worker operations, then one NOTIFY for the batch. It also
 * checks, against the journal as committed before the statement (its own
 * inserts are not visible to it), that each job's stored last event is the
 * head the batch chained after (the caller holds the job rows' locks, so
 * nothing can have moved them except a damaged journal), and that every
 * operation was recorded; either failing raises an error
 * (`docket_refuse_unwritten_batch`, migration 0016), so a COMMIT sent with
 * the statement never runs after it.
 *
 * $1 jobs, $2 events, $3 started attempts, $4 ended attempts, $5 feed
 * entries, $6 operations (all json), $7 the transaction's clock, $8 the
 * announcement ('' for none), $9 the expected heads (json), $10 the number
 * of operations, $11 the changed jobs' ids (an array beside $1, as
 * `idsOf` would give, so that the rows are found through the primary key
 * without PostgreSQL parsing the jobs' JSON a second time).
 */
const WRITE_JOB_SET = new PreparedStatement<{ checked: null }>(
  'docket_write_job_set',
  `with
   changed_jobs as (
     update jobs j set
       status = u.status, revision = u.revision, event_count = u.event_count, head_hash = u.head_hash,
       updated_at = u.updated_at, fence = u.fence, attempt_count = u.attempt_count,
       current_attempt_id = u.current_attempt_id, current_worker_incarnation = u.current_worker_incarnation,
       lease_expires_at = u.lease_expires_at, cancel_requested = u.cancel_requested,
       pause_requested = u.pause_requested, not_before = u.not_before, progress = u.progress,
       checkpoint = u.checkpoint, result = u.result, failure = u.failure,
       pending_approval = u.pending_approval, last_approval = u.last_approval, signal_count = u.signal_count,
       signals_done_through = u.signals_done_through, signals_delivered_through = u.signals_delivered_through,
       unknown_signals = u.unknown_signals, attempt_deadline = u.attempt_deadline, lease_end = u.lease_end,
       pending_parent_count = u.pending_parent_count
     from json_to_recordset($1::json) as u(
       id text, status text, revision bigint, event_count bigint, head_hash text, updated_at timestamptz,
       fence bigint, attempt_count integer, current_attempt_id text, current_worker_incarnation text,
       lease_expires_at timestamptz, cancel_requested boolean, pause_requested boolean, not_before timestamptz,
       progress jsonb, checkpoint jsonb, result jsonb, failure jsonb, pending_approval jsonb, last_approval jsonb, signal_count bigint,
       signals_done_through bigint, signals_delivered_through bigint, unknown_signals integer,
       attempt_deadline timestamptz, lease_end text, pending_parent_count integer)
     where j.id = u.id and j.id = any($11::text[])
   ),
   new_events as (
     insert into job_events (job_id, sequence, type, payload, occurred_at, attempt_id, fence, previous_hash, hash)
     select job_id, sequence, type, payload::jsonb, occurred_at, attempt_id, fence, previous_hash, hash
     from json_to_recordset($2::json) as e(
       job_id text, sequence bigint, type text, payload text, occurred_at timestamptz, attempt_id text,
       fence bigint, previous_hash text, hash text)
   ),
   started_attempts as (
     insert into attempts (id, job_id, attempt_number, fence, worker_incarnation, queue, status, started_at)
     select id, job_id, attempt_number, fence, worker_incarnation, queue, status, started_at
     from json_to_recordset($3::json) as a(
       id text, job_id text, attempt_number integer, fence bigint, worker_incarnation text, queue text,
       status text, started_at timestamptz)
   ),
   ended_attempts as (
     update attempts a set status = x.status, ended_at = $7
     from json_to_recordset($4::json) as x(id text, status text)
     where a.id = x.id and a.id = any(${idsOf('$4')}) and a.status = 'ACTIVE'
   ),
   feed_entries as (
     insert into job_changes (job_id, owner, queue, revision, status, lifecycle, changed_at)
     select id, owner, queue, revision, status, lifecycle, updated_at
     from json_to_recordset($5::json) as c(
       id text, owner text, queue text, revision bigint, status text, lifecycle text, updated_at timestamptz)
   ),
   recorded as (
     insert into worker_operations (worker_incarnation, operation_id, rpc, request_digest, response, created_at, expires_at)
     select worker_incarnation, operation_id, rpc, request_digest, decode(response, 'base64'), created_at, expires_at
     from json_to_recordset($6::json) as o(
       worker_incarnation text, operation_id text, rpc text, request_digest text, response text,
       created_at timestamptz, expires_at timestamptz)
     on conflict (worker_incarnation, operation_id) do nothing
     returning 1
   ),
   moved_heads as (
     select k.job_id from json_to_recordset($9::json) as k(job_id text, sequence bigint, hash text)
     left join lateral (select sequence, hash from job_events where job_id = k.job_id order by sequence desc limit 1) e on true
     where e.sequence is distinct from k.sequence or e.hash is distinct from k.hash
   )
   select docket_refuse_unwritten_batch((select coalesce(json_agg(job_id), '[]') from moved_heads), (select count(*) from recorded), $10) as checked,
          (select pg_notify('${JOB_CHANGES_CHANNEL}', $8) where $8 <> '') as notified`,
);

/** The columns a batch may change (the input and the identity never travel back). */
function mutableColumns(job: JobRow) {
  return {
    id: job.id,
    status: job.status,
    revision: job.revision,
    event_count: job.event_count,
    head_hash: job.head_hash,
    updated_at: job.updated_at,
    fence: job.fence,
    attempt_count: job.attempt_count,
    current_attempt_id: job.current_attempt_id,
    current_worker_incarnation: job.current_worker_incarnation,
    lease_expires_at: job.lease_expires_at,
    cancel_requested: job.cancel_requested,
    pause_requested: job.pause_requested,
    not_before: job.not_before,
    progress: job.progress,
    checkpoint: job.checkpoint,
    result: job.result,
    failure: job.failure,
    pending_approval: job.pending_approval,
    last_approval: job.last_approval,
    signal_count: job.signal_count,
    signals_done_through: job.signals_done_through,
    signals_delivered_through: job.signals_delivered_through,
    unknown_signals: job.unknown_signals,
    attempt_deadline: job.attempt_deadline,
    lease_end: job.lease_end,
    pending_parent_count: job.pending_parent_count,
  };
}

/** What {@link writeJobSet} found. */
export interface WrittenJobSet {
  /** Whether every operation was recorded (false: a concurrent call with the same operation id committed first). */
  readonly allRecorded: boolean;
  /** Jobs whose stored journal head was not the one the batch chained after. */
  readonly corruptJournals: readonly string[];
}

/**
 * Runs {@link WRITE_JOB_SET}. When it finds a moved journal head or an
 * operation recorded concurrently, the statement fails (and with it the
 * transaction) and the answer says which; the caller must then roll back.
 */
export async function writeJobSet(client: StatementTarget, set: JobWriteSet, now: Date): Promise<WrittenJobSet> {
  if (set.isEmpty && set.announcements.length === 0) return WRITTEN;
  return written(() => WRITE_JOB_SET.run(client, writeJobSetValues(set, now)));
}

/**
 * {@link writeJobSet} as the last statement of the write transaction open
 * on `client`, its COMMIT in the same round trip (`runAndCommit`); the
 * caller runs no statement after it. An empty set writes nothing and
 * leaves the commit to the transaction.
 */
export async function writeJobSetAndCommit(client: pg.ClientBase, set: JobWriteSet, now: Date): Promise<WrittenJobSet> {
  if (set.isEmpty && set.announcements.length === 0) return WRITTEN;
  return written(() => runAndCommit(client, WRITE_JOB_SET, writeJobSetValues(set, now)));
}

const WRITTEN: WrittenJobSet = { allRecorded: true, corruptJournals: [] };

/** The statement's refusals as an answer; any other failure is thrown. */
async function written(write: () => Promise<unknown>): Promise<WrittenJobSet> {
  try {
    await write();
    return WRITTEN;
  } catch (error) {
    const state = sqlStateOf(error);
    if (state === SQLSTATE.journalHeadMoved) return { allRecorded: true, corruptJournals: [String((error as { detail?: unknown }).detail)] };
    if (state === SQLSTATE.operationRecordedConcurrently) return { allRecorded: false, corruptJournals: [] };
    throw error;
  }
}

function writeJobSetValues(set: JobWriteSet, now: Date): unknown[] {
  return [
    jsonParameter([...set.jobs.values()].map(mutableColumns)),
    jsonParameter(set.events),
    jsonParameter(set.startedAttempts),
    jsonParameter(set.endedAttempts),
    jsonParameter(set.changes.map(({ id, owner, queue, revision, status, lifecycle, updated_at }) => ({ id, owner, queue, revision, status, lifecycle, updated_at }))),
    jsonParameter(set.operations.map((operation) => ({ ...operation, response: operation.response.toString('base64') }))),
    now,
    set.announcements.length === 0 ? '' : announcementOf(set.announcements),
    jsonParameter([...set.expectedHeads].map(([job_id, head]) => ({ job_id, ...head }))),
    set.operations.length,
    [...set.jobs.values()].map((job) => job.id),
  ];
}

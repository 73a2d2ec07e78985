import type pg from 'pg';
import { jsonParameter } from '../json-parameter.js';
import { PreparedStatement } from '../prepared-statement.js';
import { runAndCommit } from '../write-transaction.js';
import { JOB_CHANGES_CHANNEL, MAX_ANNOUNCEMENT_BYTES, RESYNC_ANNOUNCEMENT } from './job-changes.js';

/** One admission of a batch, as the batch statement binds it. */
export interface AdmissionRow {
  /** The row's index in its batch: how the statement names the rows whose keys it bound. */
  readonly item_no: number;
  readonly subject: string;
  readonly operation: string;
  /** SHA-256 of the idempotency key, hex. */
  readonly key_hash: string;
  readonly request_digest: string;
  readonly job_id: string;
  /** The complete response (docket.common.v1.Job, binary), base64. */
  readonly response: string;
  readonly expires_at: string;
  readonly queue: string;
  readonly label: string;
  readonly input: unknown;
  readonly priority: number;
  readonly run_after: string | null;
  readonly max_attempts: number;
  readonly initial_backoff_ms: number;
  readonly max_backoff_ms: number;
  readonly lost_attempt_policy: string;
  /** The `job.admitted` event (sequence 1): payload and hash. */
  readonly event_payload: unknown;
  readonly event_hash: string;
  readonly unique_key: string | null;
  readonly attempt_timeout_ms: number | null;
  readonly heartbeat_timeout_ms: number | null;
  readonly concurrency_key: string | null;
  /**
   * The key is bound to `job_id`, an active job with the same
   * `unique_while_active` key, and `response` is that job: nothing is
   * inserted but the binding.
   */
  readonly deduplicated: boolean;
  /** WAITING while a parent is pending, else QUEUED. */
  readonly status: 'WAITING' | 'QUEUED';
  readonly parent_ids: readonly string[];
  readonly pending_parent_count: number;
  readonly on_parent_failure: 'CANCEL' | 'RUN';
  /** Its parent -> child edges, settled already or pending. */
  readonly edges: readonly { readonly parent_job_id: string; readonly settled_status: string | null }[];
}

const ITEM_COLUMNS = `
  item_no integer, subject text, operation text, key_hash text, request_digest text, job_id text, response text,
  expires_at timestamptz, queue text, label text, input jsonb, priority integer, run_after timestamptz,
  max_attempts integer, initial_backoff_ms bigint, max_backoff_ms bigint, lost_attempt_policy text,
  event_payload jsonb, event_hash text, unique_key text, attempt_timeout_ms bigint, heartbeat_timeout_ms bigint,
  concurrency_key text, deduplicated boolean, status text, parent_ids json, pending_parent_count integer,
  on_parent_failure text, edges json`;

/**
 * The whole batch in one statement: binds every (subject, operation,
 * key_hash) that has no live binding (taking over expired ones), and only
 * for the keys it bound inserts the job row, its `job.admitted` event, its
 * feed entry and the stored response, then announces the admitted jobs
 * with one NOTIFY (a job with a concurrency key also lists the key in
 * `queue_keys`, if new); a `deduplicated` item gets only its binding, to the
 * active job it names. A key whose live binding this statement's snapshot
 * already sees is left alone (no row lock, no write): the caller replays it;
 * it is looked up by its key, one index probe per item (an anti-join would
 * hash every live binding of the table, whose plan a connection keeps while
 * the table grows). Items are bound in key order, so two batches that share
 * keys wait for each other instead of deadlocking. A key another
 * transaction holds makes this statement wait for that transaction; it is
 * then not bound here and the caller reads the winner's record.
 *
 * $1 the items (json), $2 the transaction's clock, $3 the genesis hash.
 */
const ADMIT_BATCH = new PreparedStatement<{ bound: number[] }>(
  'docket_admit_batch',
  `with item as (
     select * from json_to_recordset($1::json) as i(${ITEM_COLUMNS})
   ),
   bound as (
     insert into idempotency_records as r (subject, operation, key_hash, request_digest, job_id, response, created_at, expires_at, deduplicated)
     select subject, operation, decode(key_hash, 'hex'), request_digest, job_id, decode(response, 'base64'), $2, expires_at, deduplicated
     from item
     left join lateral (select true as bound from idempotency_records live
                        where live.subject = item.subject and live.operation = item.operation
                          and live.key_hash = decode(item.key_hash, 'hex') and live.expires_at > now()
                        limit 1) live on true
     where live.bound is null
     order by subject, operation, key_hash
     on conflict (subject, operation, key_hash) do update set
       request_digest = excluded.request_digest, job_id = excluded.job_id, response = excluded.response,
       created_at = excluded.created_at, expires_at = excluded.expires_at, redacted = false,
       deduplicated = excluded.deduplicated
     where r.expires_at <= now()
     returning subject, operation, key_hash
   ),
   bound_items as (
     select item.* from item
     join bound on bound.subject = item.subject and bound.operation = item.operation and bound.key_hash = decode(item.key_hash, 'hex')
   ),
   admitted as (select * from bound_items where not deduplicated),
   new_jobs as (
     insert into jobs (id, owner, queue, label, input, priority, revision, status, lifecycle, request_digest, run_after,
                       max_attempts, initial_backoff_ms, max_backoff_ms, lost_attempt_policy, event_count, head_hash,
                       created_at, updated_at, unique_key, attempt_timeout_ms, heartbeat_timeout_ms, concurrency_key,
                       parent_ids, pending_parent_count, on_parent_failure)
     select job_id, subject, queue, label, input, priority, 1, status, 'ACTIVE', request_digest, run_after,
            max_attempts, initial_backoff_ms, max_backoff_ms, lost_attempt_policy, 1, event_hash, $2, $2,
            unique_key, attempt_timeout_ms, heartbeat_timeout_ms, concurrency_key,
            array(select json_array_elements_text(parent_ids)), pending_parent_count, on_parent_failure
     from admitted
   ),
   new_edges as (
     insert into job_dependencies (parent_job_id, child_job_id, settled_status)
     select e.parent_job_id, admitted.job_id, e.settled_status
     from admitted cross join lateral json_to_recordset(admitted.edges) as e(parent_job_id text, settled_status text)
   ),
   new_keys as (
     insert into queue_keys (queue, concurrency_key)
     select distinct queue, concurrency_key from admitted where concurrency_key is not null
     on conflict do nothing
   ),
   new_events as (
     insert into job_events (job_id, sequence, type, payload, occurred_at, previous_hash, hash)
     select job_id, 1, 'job.admitted', event_payload, $2, $3, event_hash from admitted
   ),
   new_changes as (
     insert into job_changes (job_id, owner, queue, revision, status, lifecycle, changed_at)
     select job_id, subject, queue, 1, status, 'ACTIVE', $2 from admitted
   ),
   announcement as (
     select json_build_object('jobs', json_agg(json_build_array(job_id, '1', status, queue)))::text as payload
     from admitted
     having count(*) > 0
   )
   select coalesce((select json_agg(item_no) from bound_items), '[]'::json) as bound,
          (select pg_notify('${JOB_CHANGES_CHANNEL}',
                            case when octet_length(payload) <= ${MAX_ANNOUNCEMENT_BYTES} then payload else '${RESYNC_ANNOUNCEMENT}' end)
           from announcement) as notified`,
);

/** Runs {@link ADMIT_BATCH}; returns the `item_no` of every row whose key it bound (admitted, or deduplicated). */
export async function admitBatch(client: pg.ClientBase, rows: readonly AdmissionRow[], now: Date, genesisHash: string): Promise<Set<number>> {
  const [result] = await ADMIT_BATCH.run(client, [jsonParameter(rows), now, genesisHash]);
  return new Set(result?.bound ?? []);
}

/**
 * {@link admitBatch} as the last write of the transaction open on
 * `client`, its COMMIT in the same round trip (`runAndCommit`). What
 * follows may only read what is committed (the bindings of keys it did not
 * bind, which concurrent transactions committed), each read on its own.
 */
export async function admitBatchAndCommit(client: pg.ClientBase, rows: readonly AdmissionRow[], now: Date, genesisHash: string): Promise<Set<number>> {
  const [result] = await runAndCommit(client, ADMIT_BATCH, [jsonParameter(rows), now, genesisHash]);
  return new Set(result?.bound ?? []);
}

/**
 * Counts newly admitted children on their parents (locked by this
 * transaction since `lockParents`). $1 one parent id per edge.
 */
const BUMP_CHILD_COUNTS = new PreparedStatement<never>(
  'docket_bump_child_counts',
  `update jobs p set child_count = p.child_count + n.children
   from (select parent_id, count(*)::int as children from unnest($1::text[]) as parent_id group by parent_id) n
   where p.id = n.parent_id`,
);

/** Runs {@link BUMP_CHILD_COUNTS}. */
export async function bumpChildCounts(client: pg.ClientBase, parentPerEdge: readonly string[]): Promise<void> {
  if (parentPerEdge.length > 0) await BUMP_CHILD_COUNTS.run(client, [[...parentPerEdge]]);
}

/** A live binding read back for a key this batch did not bind. */
export interface BoundRecord {
  readonly subject: string;
  readonly operation: string;
  readonly key_hash: string;
  readonly request_digest: string;
  readonly response: Buffer;
  readonly expires_at: Date;
  readonly deduplicated: boolean;
}

const READ_BINDINGS = new PreparedStatement<BoundRecord>(
  'docket_read_bindings',
  `select r.subject, r.operation, encode(r.key_hash, 'hex') as key_hash, r.request_digest, r.response, r.expires_at, r.deduplicated
   from json_to_recordset($1::json) as k(subject text, operation text, key_hash text)
   join idempotency_records r on r.subject = k.subject and r.operation = k.operation and r.key_hash = decode(k.key_hash, 'hex')
   where r.expires_at > now()`,
);

/**
 * The live bindings of `scopes`, read in a statement of its own so that it
 * sees what concurrent transactions committed while the batch waited.
 */
export async function readBindings(
  client: pg.ClientBase,
  scopes: readonly { readonly subject: string; readonly operation: string; readonly key_hash: string }[],
): Promise<BoundRecord[]> {
  if (scopes.length === 0) return [];
  return READ_BINDINGS.run(client, [jsonParameter(scopes)]);
}

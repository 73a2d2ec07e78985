import { jsonParameter } from '../json-parameter.js';
import { PreparedStatement, type StatementTarget } from '../prepared-statement.js';
import { idsOf } from './rows-by-key.js';
import type { JobLifecycleName, JsonObject, SettledStatusName } from '../tables/index.js';
import type { JobStatusName } from '@docket/contracts';
import type { JobRow } from './jobs.js';

/** A parent named at admission, as locked. */
export interface ParentRow {
  readonly id: string;
  readonly owner: string;
  readonly status: JobStatusName;
  readonly lifecycle: JobLifecycleName;
}

/**
 * Locks the named parents in id order (so two admissions naming the same
 * parents queue instead of deadlocking) for the rest of the transaction: a
 * parent cannot end while a child that names it is being admitted, so the
 * child either sees it ended or is found by its ending.
 */
const LOCK_PARENTS = new PreparedStatement<ParentRow>(
  'docket_lock_parents',
  `select id, owner, status, lifecycle from jobs where id = any($1::text[]) order by id for no key update`,
);

/** Runs {@link LOCK_PARENTS}: the parents that exist, by id. */
export async function lockParents(target: StatementTarget, ids: readonly string[]): Promise<Map<string, ParentRow>> {
  if (ids.length === 0) return new Map();
  return new Map((await LOCK_PARENTS.run(target, [[...ids]])).map((row) => [row.id, row]));
}

/** A parent that settled its edges now. */
export interface SettledParent {
  readonly jobId: string;
  readonly status: SettledStatusName;
}

/** An edge this transaction settled. */
export interface SettledEdge {
  readonly child_job_id: string;
  readonly parent_job_id: string;
  readonly settled_status: SettledStatusName;
}

/**
 * Settles every unsettled edge of the parents, once: an edge already
 * settled (a parent that was retried and ended again) is left alone.
 * $1 the parents (json: [{job_id, status}]).
 */
const SETTLE_EDGES = new PreparedStatement<SettledEdge>(
  'docket_settle_edges',
  `update job_dependencies d set settled_status = p.status
   from json_to_recordset($1::json) as p(job_id text, status text)
   where d.parent_job_id = p.job_id and d.parent_job_id = any(${idsOf('$1', 'job_id')}) and d.settled_status is null
   returning d.child_job_id, d.parent_job_id, d.settled_status`,
);

/** Runs {@link SETTLE_EDGES}. */
export async function settleEdges(target: StatementTarget, parents: readonly SettledParent[]): Promise<SettledEdge[]> {
  if (parents.length === 0) return [];
  return SETTLE_EDGES.run(target, [jsonParameter(parents.map((parent) => ({ job_id: parent.jobId, status: parent.status })))]);
}

/** A parent's edge as its child sees it: how it settled, if it did. */
export interface ParentEdge {
  readonly job_id: string;
  readonly status: SettledStatusName | null;
}

/** A child locked for settlement, with all its edges in `parent_ids` order. */
export type LockedChild = JobRow & { readonly parent_edges: ParentEdge[] };

/**
 * Locks children in id order (every settler locks in the same order) and
 * reads each one's edges. $1 the children's ids.
 */
const LOCK_CHILDREN = new PreparedStatement<LockedChild>(
  'docket_lock_children',
  `select j.*,
          (select coalesce(json_agg(json_build_object('job_id', d.parent_job_id, 'status', d.settled_status)
                                    order by array_position(j.parent_ids, d.parent_job_id)), '[]'::json)
           from job_dependencies d where d.child_job_id = j.id) as parent_edges
   from jobs j where j.id = any($1::text[]) order by j.id for update of j`,
);

/** Runs {@link LOCK_CHILDREN}. */
export async function lockChildren(target: StatementTarget, ids: readonly string[]): Promise<LockedChild[]> {
  if (ids.length === 0) return [];
  return LOCK_CHILDREN.run(target, [[...ids]]);
}

/**
 * The results of the succeeded parents of the given children, in each
 * child's `parent_ids` order. $1 the children's ids.
 */
const READ_PARENT_RESULTS = new PreparedStatement<{ child_id: string; parent_id: string; result: JsonObject }>(
  'docket_read_parent_results',
  `select c.id as child_id, p.id as parent_id, p.result
   from jobs c cross join lateral unnest(c.parent_ids) with ordinality as u(parent_id, position)
   join jobs p on p.id = u.parent_id
   where c.id = any($1::text[]) and p.status = 'SUCCEEDED' and p.result is not null
   order by c.id, u.position`,
);

/** Runs {@link READ_PARENT_RESULTS} for the jobs that have parents: per child, its parents' results in order. */
export async function readParentResults(target: StatementTarget, jobs: Iterable<JobRow>): Promise<Map<string, [string, JsonObject][]>> {
  const ids = [...jobs].filter((job) => job.parent_ids.length > 0).map((job) => job.id);
  const byChild = new Map<string, [string, JsonObject][]>();
  if (ids.length === 0) return byChild;
  for (const row of await READ_PARENT_RESULTS.run(target, [ids])) {
    byChild.set(row.child_id, [...(byChild.get(row.child_id) ?? []), [row.parent_id, row.result]]);
  }
  return byChild;
}

/**
 * Rewrites the stored responses of admissions whose job changed in their
 * own transaction (a child cancelled at once by a parent that had already
 * failed), so that a replay answers what the first call answered.
 * $1 [{subject, operation, key_hash (hex), response (base64)}].
 */
const REWRITE_RESPONSES = new PreparedStatement<never>(
  'docket_rewrite_admission_responses',
  `update idempotency_records r set response = decode(x.response, 'base64')
   from json_to_recordset($1::json) as x(subject text, operation text, key_hash text, response text)
   where r.subject = x.subject and r.operation = x.operation and r.key_hash = decode(x.key_hash, 'hex')`,
);

/** Runs {@link REWRITE_RESPONSES}. */
export async function rewriteAdmissionResponses(
  target: StatementTarget,
  responses: readonly { readonly subject: string; readonly operation: string; readonly key_hash: string; readonly response: string }[],
): Promise<void> {
  if (responses.length > 0) await REWRITE_RESPONSES.run(target, [jsonParameter(responses)]);
}

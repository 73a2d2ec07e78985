import { incarnationFromJson, jobRowFromJson, operationFromJson } from '../json-rows.js';
import { jsonParameter } from '../json-parameter.js';
import { PreparedStatement } from '../prepared-statement.js';
import type { Opening, OpeningStatement } from '../write-transaction.js';
import type { JobRow } from './jobs.js';
import { idsOf } from './rows-by-key.js';
import type { IncarnationRow } from './workers.js';
import type { WorkerOperationRow } from './worker-operations.js';

/** The (incarnation, operation id) of a worker call. */
export interface OperationKey {
  readonly worker_incarnation: string;
  readonly operation_id: string;
}

/** The map key of an operation. */
export function operationKeyOf(key: OperationKey): string {
  return `${key.worker_incarnation}/${key.operation_id}`;
}

/** What a batch of attempt reports is decided against. */
export interface ReportContext {
  /** Recorded responses, by {@link operationKeyOf}. */
  readonly operations: ReadonlyMap<string, WorkerOperationRow>;
  readonly incarnations: ReadonlyMap<string, IncarnationRow>;
  /** The locked jobs, by id. */
  readonly jobs: ReadonlyMap<string, JobRow>;
}

const OPERATIONS = `(select coalesce(json_agg(json_build_object(
      'worker_incarnation', o.worker_incarnation, 'operation_id', o.operation_id, 'rpc', o.rpc,
      'request_digest', o.request_digest, 'response', encode(o.response, 'base64'),
      'created_at', o.created_at, 'expires_at', o.expires_at)), '[]')
   from json_to_recordset($1::json) as k(worker_incarnation text, operation_id text)
   join worker_operations o on o.worker_incarnation = k.worker_incarnation and o.operation_id = k.operation_id
   where o.worker_incarnation = any(${idsOf('$1', 'worker_incarnation')}) and o.operation_id = any(${idsOf('$1', 'operation_id')}))`;

/**
 * Marks incarnations seen (`last_seen_at`, ListWorkers and ExplainJob) at
 * most once a second each: a row seen less than a second ago, or held by
 * another transaction (a claim, a registration), is skipped rather than
 * waited for, so marking never blocks nor deadlocks a worker call.
 */
const MARK_SEEN = (ids: string) => `seen as (
     update worker_incarnations w set last_seen_at = now()
     where w.id in (select id from worker_incarnations where id = any(${ids}) and last_seen_at < now() - interval '1 second' for update skip locked)
   )`;

/** The one row of a context read: its parts as JSON arrays of rows. */
type ContextRow<Extra extends string = never> = Record<'operations' | 'incarnations' | Extra, Record<string, unknown>[]>;

const READ_REPORT_CONTEXT = new PreparedStatement<ContextRow<'jobs'>>(
  'docket_read_report_context',
  `with locked as (
     select * from jobs
     where id = any(array(select job_id from attempts where id = any($3::text[]))) and lifecycle <> 'HARD_DELETED'
     order by id for update
   ), ${MARK_SEEN('$2::text[]')}
   select ${OPERATIONS} as operations,
          (select coalesce(json_agg(w), '[]') from worker_incarnations w where w.id = any($2::text[])) as incarnations,
          (select coalesce(json_agg(l), '[]') from locked l) as jobs`,
);

/**
 * The opening read of a report batch (it travels with BEGIN,
 * `inWriteTransaction`): the responses recorded for `operations`, the
 * `incarnations` (marked seen), and the jobs of `attemptIds`, locked in id
 * order (so batches never deadlock one another). Recorded operations and
 * incarnations are read in the statement's snapshot, which may predate the
 * lock; what matters for authority is decided on the locked rows, which
 * are their latest versions.
 *
 * ```sql
 * with locked as (select * from jobs where id in (select job_id from attempts where id = any($3)) order by id for update),
 *      seen as (update worker_incarnations set last_seen_at = now() where <seen over a second ago, skip locked>)
 * select <recorded operations>, <incarnations>, <locked>
 * ```
 */
export function reportContextOpening(
  operations: readonly OperationKey[],
  incarnations: readonly string[],
  attemptIds: readonly string[],
): Opening<ReportContext> {
  return {
    statements: [{ statement: READ_REPORT_CONTEXT, values: [jsonParameter(operations), [...new Set(incarnations)], [...new Set(attemptIds)]] }],
    read: ([rows]) => {
      const [row] = (rows ?? []) as ContextRow<'jobs'>[];
      return { ...contextOf(row), jobs: new Map((row?.jobs ?? []).map(jobRowFromJson).map((job) => [job.id, job])) };
    },
  };
}

/** What a batch of claims is decided against. */
export interface ClaimContext {
  readonly operations: ReadonlyMap<string, WorkerOperationRow>;
  /** The locked incarnations, by id. */
  readonly incarnations: ReadonlyMap<string, IncarnationRow>;
}

const LOCK_CLAIM_CONTEXT = new PreparedStatement<ContextRow>(
  'docket_lock_claim_context',
  `with locked as (select * from worker_incarnations where id = any($2::text[]) order by id for update),
   seen as (update worker_incarnations w set last_seen_at = now() from locked l where w.id = l.id and l.last_seen_at < now() - interval '1 second')
   select ${OPERATIONS} as operations, (select coalesce(json_agg(l), '[]') from locked l) as incarnations`,
);

/**
 * The first opening read of a claim batch (it travels with BEGIN,
 * `inWriteTransaction`): the responses recorded for `operations` and the
 * `incarnations`, locked in id order and marked seen (at most once a
 * second each; an empty claim is a sign of life too). A registration
 * superseding one of them waits for this transaction, or this one sees it
 * superseded.
 *
 * ```sql
 * with locked as (select * from worker_incarnations where id = any($2) order by id for update),
 *      seen as (update worker_incarnations set last_seen_at = now() where <locked, seen over a second ago>)
 * select <recorded operations>, <locked>
 * ```
 */
export function claimContextStatement(operations: readonly OperationKey[], incarnations: readonly string[]): OpeningStatement {
  return { statement: LOCK_CLAIM_CONTEXT, values: [jsonParameter(operations), [...new Set(incarnations)]] };
}

/** What {@link claimContextStatement} read. */
export function claimContextOf(rows: readonly unknown[] | undefined): ClaimContext {
  return contextOf(((rows ?? []) as ContextRow[])[0]);
}

/** The recorded operations and incarnations of a context row, by key. */
function contextOf(row: ContextRow | undefined): ClaimContext {
  return {
    operations: new Map((row?.operations ?? []).map(operationFromJson).map((operation) => [operationKeyOf(operation), operation])),
    incarnations: new Map((row?.incarnations ?? []).map(incarnationFromJson).map((incarnation) => [incarnation.id, incarnation])),
  };
}

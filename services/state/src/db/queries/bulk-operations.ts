import { sql } from 'kysely';
import type { JobStatusName } from '@docket/contracts';
import type { Queryable } from '../database.js';
import { jsonParameter } from '../json-parameter.js';

/** A `bulk_operations` row. */
export interface BulkOperationRow {
  readonly id: string;
  readonly requested_by: string;
  readonly action: 'RETRY' | 'CANCEL';
  readonly filter: BulkFilterColumn;
  readonly state: 'QUEUED' | 'RUNNING' | 'COMPLETED';
  readonly matched: bigint;
  readonly changed: bigint;
  readonly skipped: bigint;
  readonly failed: bigint;
  readonly created_at: Date;
  readonly updated_at: Date;
  readonly completed_at: Date | null;
}

/** The filter as the row keeps it (and as the snapshot applied it). */
export interface BulkFilterColumn {
  readonly queue: string;
  readonly statuses: readonly JobStatusName[];
  /** ISO times, or null. */
  readonly created_before: string | null;
  readonly created_after: string | null;
}

/** An item's outcome. */
export type BulkItemOutcome = 'CHANGED' | 'SKIPPED' | 'FAILED';

/**
 * Starts a bulk operation: its row, and one item per ACTIVE job the filter
 * matches now (the snapshot that fixes `matched`), in one statement; then
 * the matched count, and COMPLETED at once when nothing matched. Run in
 * the transaction that binds the idempotency key.
 *
 * ```sql
 * with op as (insert into bulk_operations (...) values (...)),
 *   items as (insert into bulk_operation_items select $1, id from jobs where lifecycle = 'ACTIVE' and status = any($5) and <queue, created range>)
 * select count(*) from items;
 * update bulk_operations set matched = $n, state = case when $n = 0 then 'COMPLETED' ... where id = $1
 * ```
 */
export async function insertBulkOperation(
  db: Queryable,
  operation: { readonly id: string; readonly requestedBy: string; readonly action: 'RETRY' | 'CANCEL'; readonly filter: BulkFilterColumn; readonly now: Date },
): Promise<BulkOperationRow> {
  const { id, filter, now } = operation;
  const inserted = await sql<{ matched: bigint }>`
    with op as (
      insert into bulk_operations (id, requested_by, action, filter, state, matched, created_at, updated_at)
      values (${id}, ${operation.requestedBy}, ${operation.action}, ${jsonParameter(filter)}::jsonb, 'QUEUED', 0, ${now}, ${now})
    ),
    items as (
      insert into bulk_operation_items (operation_id, job_id)
      select ${id}, j.id from jobs j
      where j.lifecycle = 'ACTIVE' and j.status = any(${[...filter.statuses]}::text[])
        and (${filter.queue} = '' or j.queue = ${filter.queue})
        and (${filter.created_before}::timestamptz is null or j.created_at < ${filter.created_before}::timestamptz)
        and (${filter.created_after}::timestamptz is null or j.created_at >= ${filter.created_after}::timestamptz)
      returning 1
    )
    select count(*) as matched from items`.execute(db);
  const matched = inserted.rows[0]?.matched ?? 0n;
  const row = await sql<BulkOperationRow>`
    update bulk_operations set matched = ${matched}::bigint,
      state = case when ${matched}::bigint = 0 then 'COMPLETED' else 'QUEUED' end,
      completed_at = case when ${matched}::bigint = 0 then ${now}::timestamptz end
    where id = ${id} returning *`.execute(db);
  return row.rows[0]!;
}

/**
 * A bulk operation by id.
 *
 * ```sql
 * select * from bulk_operations where id = $1
 * ```
 */
export async function findBulkOperation(db: Queryable, id: string): Promise<BulkOperationRow | undefined> {
  return (await sql<BulkOperationRow>`select * from bulk_operations where id = ${id}`.execute(db)).rows[0];
}

/** A pending item with its operation's action and admin. */
export interface BulkItem {
  readonly operation_id: string;
  readonly job_id: string;
  readonly action: 'RETRY' | 'CANCEL';
  readonly requested_by: string;
}

/**
 * The next pending item of the oldest open operation, locked; items other
 * runners hold are skipped.
 *
 * ```sql
 * select i.operation_id, i.job_id, o.action, o.requested_by from bulk_operations o
 *   join bulk_operation_items i on i.operation_id = o.id and i.outcome is null
 * where o.state <> 'COMPLETED' order by o.created_at, o.id, i.job_id limit 1 for update of i skip locked
 * ```
 */
export async function lockNextBulkItem(db: Queryable): Promise<BulkItem | undefined> {
  const result = await sql<BulkItem>`
    select i.operation_id, i.job_id, o.action, o.requested_by
    from bulk_operations o join bulk_operation_items i on i.operation_id = o.id and i.outcome is null
    where o.state <> 'COMPLETED'
    order by o.created_at, o.id, i.job_id
    limit 1
    for update of i skip locked`.execute(db);
  return result.rows[0];
}

/**
 * Records an item's outcome and counts it on its operation, which becomes
 * RUNNING (or COMPLETED when no other item is pending, as this
 * transaction sees them).
 *
 * ```sql
 * update bulk_operation_items set outcome = $3 where operation_id = $1 and job_id = $2;
 * update bulk_operations set <count + 1>, state = case when <no other pending item> then 'COMPLETED' else 'RUNNING' end where id = $1
 * ```
 */
export async function recordBulkItem(db: Queryable, item: { readonly operationId: string; readonly jobId: string; readonly outcome: BulkItemOutcome; readonly now: Date }): Promise<void> {
  const { operationId, jobId, outcome, now } = item;
  await sql`update bulk_operation_items set outcome = ${outcome} where operation_id = ${operationId} and job_id = ${jobId}`.execute(db);
  await sql`
    update bulk_operations set
      changed = changed + ${outcome === 'CHANGED' ? 1 : 0}, skipped = skipped + ${outcome === 'SKIPPED' ? 1 : 0}, failed = failed + ${outcome === 'FAILED' ? 1 : 0},
      state = case when exists (select 1 from bulk_operation_items where operation_id = ${operationId} and outcome is null) then 'RUNNING' else 'COMPLETED' end,
      completed_at = case when exists (select 1 from bulk_operation_items where operation_id = ${operationId} and outcome is null) then null else ${now}::timestamptz end,
      updated_at = ${now}
    where id = ${operationId}`.execute(db);
}

/**
 * Completes open operations that have no pending item left (two runners
 * that handled an operation's last items at once each saw the other's as
 * pending); resolves to how many.
 *
 * ```sql
 * update bulk_operations o set state = 'COMPLETED', completed_at = now() where state <> 'COMPLETED'
 *   and not exists (select 1 from bulk_operation_items i where i.operation_id = o.id and i.outcome is null)
 * ```
 */
export async function completeDrainedBulkOperations(db: Queryable): Promise<number> {
  const result = await sql`
    update bulk_operations o set state = 'COMPLETED', completed_at = now(), updated_at = now()
    where o.state <> 'COMPLETED' and not exists (select 1 from bulk_operation_items i where i.operation_id = o.id and i.outcome is null)`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}

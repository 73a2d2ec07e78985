import type { Selectable } from 'kysely';
import type { Queryable } from '../database.js';
import type { WorkerOperationsTable } from '../tables/index.js';

/** A recorded worker operation. */
export type WorkerOperationRow = Selectable<WorkerOperationsTable>;

/**
 * The first response recorded for an operation id of an incarnation.
 *
 * ```sql
 * select * from worker_operations where worker_incarnation = $1 and operation_id = $2
 * ```
 */
export async function findWorkerOperation(db: Queryable, incarnation: string, operationId: string): Promise<WorkerOperationRow | undefined> {
  return db
    .selectFrom('worker_operations')
    .selectAll()
    .where('worker_incarnation', '=', incarnation)
    .where('operation_id', '=', operationId)
    .executeTakeFirst();
}

/**
 * Records an operation's response unless one exists; returns whether this
 * call recorded it (concurrent duplicates wait on the primary key).
 *
 * ```sql
 * insert into worker_operations (...) values (...) on conflict do nothing returning operation_id
 * ```
 */
export async function recordWorkerOperation(db: Queryable, row: WorkerOperationRow): Promise<boolean> {
  const inserted = await db
    .insertInto('worker_operations')
    .values(row)
    .onConflict((conflict) => conflict.columns(['worker_incarnation', 'operation_id']).doNothing())
    .returning('operation_id')
    .executeTakeFirst();
  return inserted !== undefined;
}

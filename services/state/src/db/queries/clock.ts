import { sql } from 'kysely';
import type { Queryable } from '../database.js';
import { statementTimeoutMs } from '../statement-budget.js';

/**
 * The transaction's timestamp (`now()`) truncated to milliseconds: the one
 * clock for every time a transaction writes, exact through JavaScript `Date`
 * and through the hash chain's RFC 3339 millisecond encoding. In the same
 * round trip it sets the transaction's `statement_timeout` to the caller's
 * budget (`withStatementBudget`), so the statements after it stop when the
 * caller has stopped waiting.
 *
 * ```sql
 * select date_trunc('milliseconds', now()) as now, set_config('statement_timeout', $1, true)
 * ```
 */
export async function transactionNow(db: Queryable): Promise<Date> {
  const result = await sql<{ now: Date }>`select date_trunc('milliseconds', now()) as now, set_config('statement_timeout', ${String(statementTimeoutMs())}, true)`.execute(db);
  const now = result.rows[0]?.now;
  if (!now) throw new Error('now() returned no row');
  return now;
}

/**
 * The calling transaction's MVCC snapshot as `pg_snapshot` text
 * (`xmin:xmax:xip,...`). Under REPEATABLE READ it is the snapshot every
 * statement of the transaction reads.
 *
 * ```sql
 * select pg_current_snapshot()::text as snapshot
 * ```
 */
export async function currentSnapshot(db: Queryable): Promise<string> {
  const result = await sql<{ snapshot: string }>`select pg_current_snapshot()::text as snapshot`.execute(db);
  const snapshot = result.rows[0]?.snapshot;
  if (!snapshot) throw new Error('pg_current_snapshot() returned no row');
  return snapshot;
}

/**
 * The database's clock as of this statement (`clock_timestamp()`, not the
 * transaction's start that {@link transactionNow} answers), in milliseconds
 * and never before `atLeast`: a time written after something that
 * committed elsewhere during the transaction (an admission through the
 * group commit) is not dated before it.
 *
 * ```sql
 * select date_trunc('milliseconds', clock_timestamp()) as now
 * ```
 */
export async function statementNow(db: Queryable, atLeast: Date): Promise<Date> {
  const result = await sql<{ now: Date }>`select date_trunc('milliseconds', clock_timestamp()) as now`.execute(db);
  const now = result.rows[0]?.now ?? atLeast;
  return now.getTime() < atLeast.getTime() ? atLeast : now;
}

import type pg from 'pg';
import { statementTimeoutMs } from './statement-budget.js';

/**
 * Runs `body` in one READ COMMITTED transaction on a pooled connection and
 * commits it. BEGIN, the statement timeout and the transaction's clock
 * travel in one round trip (a simple-protocol query of three statements);
 * `now` is the transaction's `now()` truncated to milliseconds, the one
 * clock for every time the transaction writes (exact through JavaScript
 * `Date` and through the hash chain's millisecond encoding). The statement
 * timeout is the caller's budget (`withStatementBudget`), so work whose
 * callers have all given up is stopped by Postgres.
 *
 * `clockNow()` is the database's time as of the moment it is called, never
 * earlier: `now` plus the time elapsed since BEGIN was sent. A decision
 * that depends on the present (is a lease still running?) is taken with it
 * after the locks it needs are held, not with `now`, which was fixed before
 * any lock wait.
 *
 * Any failure rolls back; a broken connection (a failed rollback, or an
 * error event while checked out) is discarded rather than returned to the
 * pool.
 */
export async function inWriteTransaction<T>(
  pool: pg.Pool,
  body: (client: pg.PoolClient, now: Date, clockNow: () => Date) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // A checked-out client has no idle listener: an error between queries (the
  // backend terminated) must not become an unhandled 'error' event.
  const onError = (error: Error): void => {
    broken = error;
  };
  client.on('error', onError);
  try {
    const sentAt = performance.now();
    const opened = (await client.query(beginWithClock(statementTimeoutMs()))) as unknown as pg.QueryResult<{ now: Date }>[];
    const now = opened[2]?.rows[0]?.now;
    if (!now) throw new Error('now() returned no row');
    // +1 ms: now was truncated to milliseconds.
    const clockNow = (): Date => new Date(now.getTime() + 1 + Math.ceil(performance.now() - sentAt));
    const result = await body(client, now, clockNow);
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback').catch((rollbackError: Error) => {
      broken = rollbackError;
    });
    throw error;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

/** BEGIN, the transaction's statement timeout (a whole number of ms, so safe to inline) and its clock. */
function beginWithClock(timeoutMs: number): string {
  return `begin; set local statement_timeout = ${Math.trunc(timeoutMs)}; select date_trunc('milliseconds', now()) as now`;
}

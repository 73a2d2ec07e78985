import type pg from 'pg';
import { WAL_READING_COLUMNS, type WalReadingRow } from './queries/database-lineage.js';
import { statementTimeoutMs } from './statement-budget.js';

/**
 * What a pool's write transactions report to (the rollback guard): the
 * WAL position each one reads as it opens, each commit it acknowledges,
 * and whether they may run at all.
 */
export interface CommitRecorder {
  /**
   * A reading of the primary's flush position (null on a server in
   * recovery) by a statement sent at `sentAt` (`performance.now()`): an
   * upper bound of every commit acknowledged before then.
   */
  recordReading(sentAt: number, lsn: string | null, synchronous: boolean): void;
  /**
   * A commit that just returned, about to be acknowledged, with the job ids
   * it admitted; `synchronous` is what its transaction read as it opened.
   * Its position is bounded by the next reading sent after now.
   */
  recordAcknowledged(synchronous: boolean, jobIds: readonly string[]): void;
  /** Throws while no write may be made (the database lost acknowledged writes). */
  assertServing(): void;
}

const recorders = new WeakMap<pg.Pool, CommitRecorder>();

/**
 * Makes every {@link inWriteTransaction} on `pool` check `recorder` once it
 * holds its connection and report its commit position to it. Without a
 * recorder a transaction commits with a plain COMMIT.
 */
export function recordCommitsOf(pool: pg.Pool, recorder: CommitRecorder): void {
  recorders.set(pool, recorder);
}

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
 * With a {@link CommitRecorder} for the pool, the transaction first asks
 * it whether writes may be made (after the connection is had: a new
 * connection is checked as it opens, so a wait for one cannot slip past a
 * rollback found meanwhile); the statement that reads its clock also reads
 * the WAL flush position ({@link WAL_READING_COLUMNS}), a bound of every
 * commit acknowledged before it, and its commit is reported with the job
 * ids `acknowledgedJobIds` picks from the result. No statement or round
 * trip is added.
 *
 * Any failure rolls back; a broken connection (a failed rollback, or an
 * error event while checked out) is discarded rather than returned to the
 * pool.
 */
export async function inWriteTransaction<T>(
  pool: pg.Pool,
  body: (client: pg.PoolClient, now: Date, clockNow: () => Date) => Promise<T>,
  acknowledgedJobIds?: (result: T) => readonly string[],
): Promise<T> {
  const recorder = recorders.get(pool);
  const client = await pool.connect();
  let broken: Error | undefined;
  // A checked-out client has no idle listener: an error between queries (the
  // backend terminated) must not become an unhandled 'error' event.
  const onError = (error: Error): void => {
    broken = error;
  };
  client.on('error', onError);
  try {
    recorder?.assertServing();
    const sentAt = performance.now();
    const opened = (await client.query(beginWithClock(statementTimeoutMs(), recorder !== undefined))) as unknown as pg.QueryResult<{ now: Date } & Partial<WalReadingRow>>[];
    const clock = opened[2]?.rows[0];
    const now = clock?.now;
    if (!now) throw new Error('now() returned no row');
    recorder?.recordReading(sentAt, clock.lsn ?? null, clock.synchronous === true);
    // +1 ms: now was truncated to milliseconds.
    const clockNow = (): Date => new Date(now.getTime() + 1 + Math.ceil(performance.now() - sentAt));
    const result = await body(client, now, clockNow);
    await client.query('commit');
    recorder?.recordAcknowledged(clock.synchronous === true, acknowledgedJobIds?.(result) ?? []);
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

/** BEGIN, the transaction's statement timeout (a whole number of ms, so safe to inline) and its clock, with the WAL reading if asked. */
function beginWithClock(timeoutMs: number, withWalReading: boolean): string {
  return `begin; set local statement_timeout = ${Math.trunc(timeoutMs)}; select date_trunc('milliseconds', now()) as now${withWalReading ? `, ${WAL_READING_COLUMNS}` : ''}`;
}

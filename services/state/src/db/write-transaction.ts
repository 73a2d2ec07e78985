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

/** A named statement that can travel inside a simple-protocol query with BEGIN or COMMIT: a `PreparedStatement`. */
export interface TravellingStatement<Row> {
  /** Whether `client` holds it prepared, so `EXECUTE` can name it. */
  isPreparedOn(client: pg.ClientBase): boolean;
  /** `EXECUTE name(...)` with `values` as literals. */
  executeText(values: readonly unknown[]): string;
  /** Runs it alone, with its values bound. */
  run(client: pg.ClientBase, values: readonly unknown[]): Promise<Row[]>;
}

/** One statement of an {@link Opening}, with its values. */
export interface OpeningStatement {
  readonly statement: TravellingStatement<unknown>;
  readonly values: readonly unknown[];
}

/**
 * The statements that travel with a transaction's BEGIN, in its round trip
 * (their values cannot depend on the transaction's clock), and what their
 * rows mean to the body: the first reads of a claim or report batch. Each
 * is a statement of its own, so each reads in a snapshot taken after the
 * one before it finished, with the locks that one took held.
 */
export interface Opening<Opened> {
  readonly statements: readonly OpeningStatement[];
  /** The body's reading of the statements' rows, in order. */
  readonly read: (rows: readonly unknown[][]) => Opened;
}

/**
 * The openings of two parts of one transaction as one: `first`'s
 * statements, then `second`'s, each part reading its own rows. A part may
 * be absent (a batch without claims, or without reports); its reading is
 * then undefined.
 */
export function jointOpening<First, Second>(
  first: Opening<First> | undefined,
  second: Opening<Second> | undefined,
): Opening<{ readonly first: First | undefined; readonly second: Second | undefined }> {
  const split = first?.statements.length ?? 0;
  return {
    statements: [...(first?.statements ?? []), ...(second?.statements ?? [])],
    read: (rows) => ({ first: first?.read(rows.slice(0, split)), second: second?.read(rows.slice(split)) }),
  };
}

/** Options for {@link inWriteTransaction}. */
export interface WriteTransactionOptions<T, Opened> {
  /** The first statements, sent with BEGIN; their reading is the body's fourth argument. */
  readonly opening?: Opening<Opened>;
  /** The job ids a result admitted, reported to the commit recorder. */
  readonly acknowledgedJobIds?: (result: T) => readonly string[];
}

/**
 * The longest statement text that travels beside BEGIN or COMMIT. Its
 * values go as literals, quoted and parsed as text on both sides; past this
 * size (a SubmitJobs call of a hundred jobs) that costs more than the round
 * trip it saves, and the statement runs alone with its values bound.
 */
const TRAVELLING_TEXT_LIMIT = 16 * 1024;

/** The write transactions open now, by connection: whether a statement already committed one ({@link runAndCommit}). */
const openTransactions = new WeakMap<pg.ClientBase, { committed: boolean }>();

/**
 * Runs `body` in one READ COMMITTED transaction on a pooled connection and
 * commits it. BEGIN, the statement timeout and the transaction's clock
 * travel in one round trip (a simple-protocol query of three statements),
 * with the `opening` statements after them when the connection holds them
 * prepared (`EXECUTE`, their values as literals); `now` is the transaction's
 * `now()` truncated to milliseconds, the one clock for every time the
 * transaction writes (exact through JavaScript `Date` and through the hash
 * chain's millisecond encoding). The statement timeout is the caller's
 * budget (`withStatementBudget`), so work whose callers have all given up
 * is stopped by Postgres. The body's last statement may carry COMMIT in
 * its own round trip ({@link runAndCommit}); otherwise COMMIT follows the
 * body. So a claim or report batch whose reads and writes are one
 * statement each is two round trips, not four.
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
export async function inWriteTransaction<T, Opened = undefined>(
  pool: pg.Pool,
  body: (client: pg.PoolClient, now: Date, clockNow: () => Date, opened: NoInfer<Opened>) => Promise<T>,
  options: WriteTransactionOptions<T, Opened> = {},
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
  const transaction = { committed: false };
  openTransactions.set(client, transaction);
  try {
    recorder?.assertServing();
    const { opening } = options;
    const statements = opening?.statements ?? [];
    const executions = statements.map(({ statement, values }) => travellingText(client, statement, values));
    const openingTravels = executions.length > 0 && executions.every((text) => text !== undefined);
    const sentAt = performance.now();
    const begin = beginWithClock(statementTimeoutMs(), recorder !== undefined);
    const text = openingTravels ? [begin, ...(executions as string[])].join('; ') : begin;
    const opened = (await client.query(text)) as unknown as pg.QueryResult<{ now: Date } & Partial<WalReadingRow>>[];
    const clock = opened[2]?.rows[0];
    const now = clock?.now;
    if (!now) throw new Error('now() returned no row');
    recorder?.recordReading(sentAt, clock.lsn ?? null, clock.synchronous === true);
    // +1 ms: now was truncated to milliseconds.
    const clockNow = (): Date => new Date(now.getTime() + 1 + Math.ceil(performance.now() - sentAt));
    const openingRows: unknown[][] = [];
    for (const [index, { statement, values }] of statements.entries()) {
      openingRows.push(openingTravels ? (opened[3 + index]?.rows ?? []) : await statement.run(client, values));
    }
    const result = await body(client, now, clockNow, (opening === undefined ? undefined : opening.read(openingRows)) as Opened);
    if (!transaction.committed) await client.query('commit');
    recorder?.recordAcknowledged(clock.synchronous === true, options.acknowledgedJobIds?.(result) ?? []);
    return result;
  } catch (error) {
    await client.query('rollback').catch((rollbackError: Error) => {
      broken = rollbackError;
    });
    throw error;
  } finally {
    openTransactions.delete(client);
    client.off('error', onError);
    client.release(broken);
  }
}

/**
 * Runs `statement` as the last statement of the write transaction open on
 * `client` and commits that transaction in the same round trip
 * (`EXECUTE ...; COMMIT`, one simple-protocol query: a failing statement
 * skips the COMMIT, and the transaction rolls back). A check that must
 * stop the commit is made by the statement itself, raising an error. What
 * the body runs after it runs outside the transaction, each statement
 * committing on its own, so only reads of committed state belong there
 * (admission's read of bindings concurrent calls made); a failure after it
 * fails the call although its writes committed, which every caller of a
 * write transaction survives by retrying with the same key or operation
 * id. Outside a write transaction, on a connection that does not yet hold
 * the statement prepared, or with values too large to travel as literals
 * ({@link TRAVELLING_TEXT_LIMIT}), the statement runs alone and the
 * transaction commits after its body as usual.
 */
export async function runAndCommit<Row>(client: pg.ClientBase, statement: TravellingStatement<Row>, values: readonly unknown[]): Promise<Row[]> {
  const transaction = openTransactions.get(client);
  const execution = transaction === undefined || transaction.committed ? undefined : travellingText(client, statement, values);
  if (transaction === undefined || execution === undefined) return statement.run(client, values);
  const [written] = (await client.query(`${execution}; commit`)) as unknown as pg.QueryResult<Row & pg.QueryResultRow>[];
  transaction.committed = true;
  return written?.rows ?? [];
}

/** `statement` as `EXECUTE` text, if it may travel beside BEGIN or COMMIT on `client`: prepared there, and its values within {@link TRAVELLING_TEXT_LIMIT}. */
function travellingText(client: pg.ClientBase, statement: TravellingStatement<unknown>, values: readonly unknown[]): string | undefined {
  if (!statement.isPreparedOn(client) || textLength(values) > TRAVELLING_TEXT_LIMIT) return undefined;
  return statement.executeText(values);
}

/** About how many characters `values` take as text (strings and arrays of strings; the rest are short). */
function textLength(values: readonly unknown[]): number {
  let length = 0;
  for (const value of values) {
    if (typeof value === 'string') length += value.length;
    else if (Array.isArray(value)) for (const item of value) length += typeof item === 'string' ? item.length + 3 : 4;
    else length += 32;
  }
  return length;
}

/** BEGIN, the transaction's statement timeout (a whole number of ms, so safe to inline) and its clock, with the WAL reading if asked. */
function beginWithClock(timeoutMs: number, withWalReading: boolean): string {
  return `begin; set local statement_timeout = ${Math.trunc(timeoutMs)}; select date_trunc('milliseconds', now()) as now${withWalReading ? `, ${WAL_READING_COLUMNS}` : ''}`;
}

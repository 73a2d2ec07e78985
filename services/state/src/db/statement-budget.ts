import { AsyncLocalStorage } from 'node:async_hooks';

/** The longest one statement may run when no caller set a deadline (also every connection's default). */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;

/**
 * How long past its statement_timeout a statement's answer may be late
 * before its connection is taken for dead (see `WatchedPgClient`): Postgres
 * answers a timed-out statement at once, so only a connection whose peer
 * is gone (a partition, a half-open socket) stays silent that long.
 */
export const ANSWER_GRACE_MS = 2_000;

/** How much of a caller's remaining time is kept back, at most, so the typed answer reaches it before its own deadline fires. */
const ANSWER_MARGIN_MS = 250;

/** `performance.now()` by which the statements of the work in this async context must be done. */
const deadlines = new AsyncLocalStorage<number>();

/**
 * Runs `fn` with the caller's remaining `timeoutMs` as the statement budget
 * of the transactions it opens (`statementTimeoutMs`): Postgres stops work
 * that no caller waits for any more, and the caller hears DEADLINE_EXCEEDED
 * from us (typed, with ErrorInfo) rather than from its own timer. A batch
 * runs with the latest deadline among its items; no deadline means
 * {@link DEFAULT_STATEMENT_TIMEOUT_MS}.
 */
export function withStatementBudget<T>(timeoutMs: number | undefined, fn: () => Promise<T>): Promise<T> {
  // No budget is a budget too: a batch whose callers did not all set a deadline must not inherit its first caller's.
  return timeoutMs === undefined ? deadlines.exit(fn) : deadlines.run(performance.now() + timeoutMs, fn);
}

/**
 * Runs `fn` with no client-side limit on its statements' answers
 * (`answerTimeoutMs` is undefined): for work that sets its own
 * statement_timeout and may rightly wait long, the migrations under their
 * advisory lock. Its transactions still open with the default timeout.
 */
export function withoutStatementLimit<T>(fn: () => Promise<T>): Promise<T> {
  return deadlines.run(Number.POSITIVE_INFINITY, fn);
}

/**
 * The `statement_timeout` for a transaction opened now: what is left of
 * the budget, less a margin of a tenth (at most 250 ms) so the answer
 * arrives in time; at least 1 ms (0 would mean no limit at all), at most
 * the default.
 */
export function statementTimeoutMs(): number {
  const deadline = deadlines.getStore();
  if (deadline === undefined) return DEFAULT_STATEMENT_TIMEOUT_MS;
  const remaining = deadline - performance.now();
  const budget = remaining - Math.min(ANSWER_MARGIN_MS, remaining / 10);
  return Math.max(1, Math.min(DEFAULT_STATEMENT_TIMEOUT_MS, Math.floor(budget)));
}

/**
 * How long a statement issued now may go unanswered before its connection
 * is dropped: the statement budget ({@link statementTimeoutMs}) plus
 * {@link ANSWER_GRACE_MS}; undefined under {@link withoutStatementLimit}.
 * By then Postgres has answered (a transaction's statement_timeout is that
 * budget) or, for a statement outside one, whose server-side limit is the
 * connection's 30 s, its caller has given up; either way a connection
 * still silent is not worth keeping.
 */
export function answerTimeoutMs(): number | undefined {
  if (deadlines.getStore() === Number.POSITIVE_INFINITY) return undefined;
  return statementTimeoutMs() + ANSWER_GRACE_MS;
}

/**
 * The SQLSTATE codes the state service reacts to, in one place.
 * (graphile/worker keeps the same table.)
 */
export const SQLSTATE = {
  uniqueViolation: '23505',
  serializationFailure: '40001',
  deadlockDetected: '40P01',
  queryCanceled: '57014',
  adminShutdown: '57P01',
  cannotConnectNow: '57P03',
  /** A write on a server in recovery: a standby, or a primary being promoted (Patroni's check answers before promotion ends). */
  readOnlySqlTransaction: '25006',
  /** Docket's own (migration 0016): a batch's write met a journal head it did not chain after; the job id is the detail. */
  journalHeadMoved: 'DKJ01',
  /** Docket's own (migration 0016): a batch's write found an operation id recorded by a concurrent call. */
  operationRecordedConcurrently: 'DKO01',
} as const;

/** The SQLSTATE of a pg error, if `error` is one. */
export function sqlStateOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** Whether a transaction that failed with `error` may simply be retried. */
export function isRetryableTransactionFailure(error: unknown): boolean {
  const state = sqlStateOf(error);
  return state === SQLSTATE.serializationFailure || state === SQLSTATE.deadlockDetected;
}

/** Whether `error` means the database is (temporarily) unreachable. */
export function isDatabaseUnavailable(error: unknown): boolean {
  const state = sqlStateOf(error);
  if (state === SQLSTATE.adminShutdown || state === SQLSTATE.cannotConnectNow || state === SQLSTATE.readOnlySqlTransaction) return true;
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'ETIMEDOUT' || code === 'EPIPE') return true;
  return state === undefined && error instanceof Error && CONNECTION_LOST.test(error.message);
}

/**
 * node-postgres' own errors for a connection that died under a query, or
 * that could not be had in time (pg-pool's connect timeout, and the
 * connection timeout of a client), or asked of a pool this process has
 * already closed (a call still running as it shuts down); they carry no code.
 */
const CONNECTION_LOST = /^(Connection terminated|Client has encountered a connection error|Client was closed|timeout exceeded when trying to connect|Cannot use a pool after calling end)/;

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
  if (state === SQLSTATE.adminShutdown || state === SQLSTATE.cannotConnectNow) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'ETIMEDOUT' || code === 'EPIPE';
}

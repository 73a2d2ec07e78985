import { readCursorConfig, readFrontServiceConfig, readSecondsAsMs, type CursorConfig, type Environment, type FrontServiceConfig } from '@docket/service-kit';

/**
 * The admission service's configuration, read from the environment only.
 * Its cursor settings are the events service's: the change-feed cursors it
 * hands out with a listing are resumed there.
 */
export interface AdmissionConfig extends FrontServiceConfig, CursorConfig {
  /** How long idempotency bindings are kept (at least 24 hours). */
  readonly idempotencyTtlMs: number;
  /** How long a ListJobs page token stays usable. */
  readonly pageTokenTtlMs: number;
}

/** Default port of the admission service (SPEC section 12). */
export const ADMISSION_DEFAULT_PORT = 7401;
const DAY_SECONDS = 86_400;

/**
 * Reads the front-service settings, the cursor settings (DOCKET_CURSOR_SECRET,
 * DOCKET_FEED_CURSOR_TTL_SECONDS, default 604800, 7 days), plus
 * DOCKET_IDEMPOTENCY_TTL_SECONDS (default and minimum 86400) and
 * DOCKET_PAGE_TOKEN_TTL_SECONDS (default 86400).
 */
export function readAdmissionConfig(env: Environment): AdmissionConfig {
  const idempotencyTtlMs = readSecondsAsMs(env, 'DOCKET_IDEMPOTENCY_TTL_SECONDS', DAY_SECONDS);
  if (idempotencyTtlMs < DAY_SECONDS * 1000) throw new Error('DOCKET_IDEMPOTENCY_TTL_SECONDS must be at least 86400');
  return {
    ...readFrontServiceConfig(env, ADMISSION_DEFAULT_PORT),
    ...readCursorConfig(env),
    idempotencyTtlMs,
    pageTokenTtlMs: readSecondsAsMs(env, 'DOCKET_PAGE_TOKEN_TTL_SECONDS', DAY_SECONDS),
  };
}

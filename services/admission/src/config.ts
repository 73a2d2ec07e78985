import { readCursorSecret, readFeedCursorTtlMs, readFrontServiceConfig, readSecondsAsMs, type Environment, type FrontServiceConfig } from '@docket/service-kit';

/** The admission service's configuration, read from the environment only. */
export interface AdmissionConfig extends FrontServiceConfig {
  readonly cursorSecret: string;
  /** How long idempotency bindings are kept (at least 24 hours). */
  readonly idempotencyTtlMs: number;
  /** How long a ListJobs page token stays usable. */
  readonly pageTokenTtlMs: number;
  /**
   * How long a change-feed cursor handed out with a listing stays usable:
   * the events service's setting, which execution prunes the feed after
   * (plus a day), so that no cursor outlives the entries it resumes from.
   */
  readonly feedCursorTtlMs: number;
}

/** Default port of the admission service (SPEC section 12). */
export const ADMISSION_DEFAULT_PORT = 7401;
const DAY_SECONDS = 86_400;

/**
 * Reads the front-service settings plus DOCKET_CURSOR_SECRET,
 * DOCKET_IDEMPOTENCY_TTL_SECONDS (default and minimum 86400),
 * DOCKET_PAGE_TOKEN_TTL_SECONDS (default 86400) and
 * DOCKET_FEED_CURSOR_TTL_SECONDS (default 604800, 7 days).
 */
export function readAdmissionConfig(env: Environment): AdmissionConfig {
  const idempotencyTtlMs = readSecondsAsMs(env, 'DOCKET_IDEMPOTENCY_TTL_SECONDS', DAY_SECONDS);
  if (idempotencyTtlMs < DAY_SECONDS * 1000) throw new Error('DOCKET_IDEMPOTENCY_TTL_SECONDS must be at least 86400');
  return {
    ...readFrontServiceConfig(env, ADMISSION_DEFAULT_PORT),
    cursorSecret: readCursorSecret(env),
    idempotencyTtlMs,
    pageTokenTtlMs: readSecondsAsMs(env, 'DOCKET_PAGE_TOKEN_TTL_SECONDS', DAY_SECONDS),
    feedCursorTtlMs: readFeedCursorTtlMs(env),
  };
}

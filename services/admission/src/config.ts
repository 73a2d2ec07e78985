import { readListenAddress, readPositiveInteger, readShutdownGraceMs, requireEnv } from '@docket/service-kit';

/** The admission service's configuration, read from the environment only. */
export interface AdmissionConfig {
  readonly listen: { readonly host: string; readonly port: number };
  readonly stateUrl: string;
  readonly authSecret: string;
  readonly serviceToken: string;
  readonly cursorSecret: string;
  /** How long idempotency bindings are kept (at least 24 hours). */
  readonly idempotencyTtlMs: number;
  /** How long a ListJobs page token stays usable. */
  readonly pageTokenTtlMs: number;
  readonly shutdownGraceMs: number;
}

/** Default port of the admission service (SPEC section 12). */
export const ADMISSION_DEFAULT_PORT = 7401;
const DAY_MS = 24 * 3_600_000;

/**
 * Reads DOCKET_LISTEN, DOCKET_STATE_URL, DOCKET_AUTH_SECRET,
 * DOCKET_SERVICE_TOKEN, DOCKET_CURSOR_SECRET and the optional
 * DOCKET_IDEMPOTENCY_TTL_SECONDS (default and minimum 86400) and
 * DOCKET_PAGE_TOKEN_TTL_SECONDS (default 86400) and DOCKET_SHUTDOWN_GRACE_MS.
 */
export function readAdmissionConfig(env: NodeJS.ProcessEnv): AdmissionConfig {
  const idempotencyTtlMs = readPositiveInteger(env, 'DOCKET_IDEMPOTENCY_TTL_SECONDS', DAY_MS / 1000) * 1000;
  if (idempotencyTtlMs < DAY_MS) throw new Error('DOCKET_IDEMPOTENCY_TTL_SECONDS must be at least 86400');
  return {
    listen: readListenAddress(env, ADMISSION_DEFAULT_PORT),
    stateUrl: env['DOCKET_STATE_URL'] || 'http://127.0.0.1:7404',
    authSecret: requireEnv(env, 'DOCKET_AUTH_SECRET'),
    serviceToken: requireEnv(env, 'DOCKET_SERVICE_TOKEN'),
    cursorSecret: requireEnv(env, 'DOCKET_CURSOR_SECRET'),
    idempotencyTtlMs,
    pageTokenTtlMs: readPositiveInteger(env, 'DOCKET_PAGE_TOKEN_TTL_SECONDS', DAY_MS / 1000) * 1000,
    shutdownGraceMs: readShutdownGraceMs(env),
  };
}

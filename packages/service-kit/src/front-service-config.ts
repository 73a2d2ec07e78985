import { DEFAULT_INTERNAL_DEADLINE_MS } from './service-transport.js';
import { SERVICE_TOKEN_TTL_SECONDS, type PublicKeySet, type TokenRules } from '@docket/auth';
import type { StateBatchOptions } from './batching-state-client.js';
import { readCorsOrigins } from './cors.js';
import {
  readListenAddress,
  readPositiveInteger,
  readPublicKeySet,
  readSecondsAsMs,
  readShutdownGraceMs,
  readTokenRules,
  requireSecret,
  type Environment,
} from './environment.js';
import { DEFAULT_FEED_CURSOR_TTL_MS } from './feed-cursor.js';

/**
 * What every public service (admission, execution, events) needs: where to
 * listen, where the state service is and the credentials for both hops.
 */
export interface FrontServiceConfig {
  readonly listen: { readonly host: string; readonly port: number };
  readonly stateUrl: string;
  /** Verifies the HS256 bearer tokens callers present (`DOCKET_AUTH_SECRET`); absent when only `authPublicKeys` are accepted. */
  readonly authSecret?: string;
  /** Verifies the EdDSA and RS256 bearer tokens of an external issuer (`DOCKET_AUTH_JWKS_FILE`); absent when unset. */
  readonly authPublicKeys?: PublicKeySet;
  /** What public tokens must carry besides (`DOCKET_AUTH_AUDIENCE`, `DOCKET_AUTH_ISSUER`, clock skew). */
  readonly tokenRules: TokenRules;
  /** Signs this service's own short-lived tokens to the state service (`DOCKET_SERVICE_AUTH_SECRET`). */
  readonly serviceAuthSecret: string;
  /** How long each of those tokens lives (`DOCKET_SERVICE_TOKEN_TTL_SECONDS`, default 300, at most 3600). */
  readonly serviceTokenTtlSeconds: number;
  readonly shutdownGraceMs: number;
  /** How calls to the state service are coalesced (DOCKET_STATE_BATCH_MAX, DOCKET_STATE_BATCHES_IN_FLIGHT). */
  readonly stateBatch: StateBatchOptions;
  /** The deadline of a call to the state service whose caller set none (DOCKET_STATE_CALL_TIMEOUT_MS, default 10 s). */
  readonly stateCallTimeoutMs: number;
  /** Browser origins allowed to call cross-origin (`DOCKET_CORS_ORIGINS`, see `readCorsOrigins`). */
  readonly corsOrigins: readonly string[];
}

/** The state service's default address (SPEC section 12). */
export const DEFAULT_STATE_URL = 'http://127.0.0.1:7404';

/**
 * Reads DOCKET_LISTEN (default 127.0.0.1:`defaultPort`), DOCKET_STATE_URL,
 * the public token keys (DOCKET_AUTH_SECRET, DOCKET_AUTH_JWKS_FILE, or
 * both; at least one, and the secret is required when there is no key set),
 * DOCKET_SERVICE_AUTH_SECRET (strong, and different from DOCKET_AUTH_SECRET:
 * a public token must never be able to pass for a service token), the
 * token rules (`readTokenRules`), DOCKET_SHUTDOWN_GRACE_MS,
 * DOCKET_STATE_BATCH_MAX (default 128, at most 256),
 * DOCKET_STATE_BATCHES_IN_FLIGHT (default 2; beyond the first, only full batches) and
 * DOCKET_STATE_CALL_TIMEOUT_MS (default 10000) and DOCKET_CORS_ORIGINS.
 */
export function readFrontServiceConfig(env: Environment, defaultPort: number): FrontServiceConfig {
  const authPublicKeys = readPublicKeySet(env);
  if (!env['DOCKET_AUTH_SECRET'] && authPublicKeys === undefined) {
    throw new Error('environment variable DOCKET_AUTH_SECRET or DOCKET_AUTH_JWKS_FILE (or both) is required but neither is set');
  }
  const authSecret = env['DOCKET_AUTH_SECRET'] ? requireSecret(env, 'DOCKET_AUTH_SECRET') : undefined;
  const serviceAuthSecret = requireSecret(env, 'DOCKET_SERVICE_AUTH_SECRET');
  if (serviceAuthSecret === authSecret) {
    throw new Error('DOCKET_SERVICE_AUTH_SECRET must differ from DOCKET_AUTH_SECRET: whoever mints public tokens could otherwise call the state service');
  }
  const stateCallTimeoutMs = readPositiveInteger(env, 'DOCKET_STATE_CALL_TIMEOUT_MS', DEFAULT_INTERNAL_DEADLINE_MS);
  const serviceTokenTtlSeconds = readPositiveInteger(env, 'DOCKET_SERVICE_TOKEN_TTL_SECONDS', SERVICE_TOKEN_TTL_SECONDS);
  if (serviceTokenTtlSeconds > 3_600) throw new Error(`DOCKET_SERVICE_TOKEN_TTL_SECONDS must be at most 3600, got ${serviceTokenTtlSeconds}`);
  return {
    listen: readListenAddress(env, defaultPort),
    stateUrl: env['DOCKET_STATE_URL'] || DEFAULT_STATE_URL,
    ...(authSecret === undefined ? {} : { authSecret }),
    ...(authPublicKeys === undefined ? {} : { authPublicKeys }),
    tokenRules: readTokenRules(env),
    serviceAuthSecret,
    serviceTokenTtlSeconds,
    shutdownGraceMs: readShutdownGraceMs(env),
    stateBatch: {
      maxBatch: Math.min(256, readPositiveInteger(env, 'DOCKET_STATE_BATCH_MAX', 128)),
      maxInFlight: readPositiveInteger(env, 'DOCKET_STATE_BATCHES_IN_FLIGHT', 2),
      callTimeoutMs: stateCallTimeoutMs,
    },
    stateCallTimeoutMs,
    corsOrigins: readCorsOrigins(env),
  };
}

/**
 * The HMAC secret of the tokens a caller hands back (`DOCKET_CURSOR_SECRET`):
 * admission's ListJobs page tokens and snapshot cursors, and the change-feed
 * cursors the events service resumes from, so the two services must read
 * the same variable the same way. Strong, as `requireSecret` demands.
 */
export function readCursorSecret(env: Environment): string {
  return requireSecret(env, 'DOCKET_CURSOR_SECRET');
}

/**
 * How long a change-feed cursor stays resumable, in milliseconds:
 * `DOCKET_FEED_CURSOR_TTL_SECONDS` (default 604800, 7 days). The events
 * service honours cursors that long and the execution service keeps feed
 * entries longer, so both read it here.
 */
export function readFeedCursorTtlMs(env: Environment): number {
  return readSecondsAsMs(env, 'DOCKET_FEED_CURSOR_TTL_SECONDS', DEFAULT_FEED_CURSOR_TTL_MS / 1000);
}

/**
 * The settings of the tokens a caller hands back that the admission and
 * events services must agree on: admission signs ListJobs page tokens,
 * snapshot cursors and the change-feed cursors it hands out with a listing,
 * which the events service resumes WatchJobs from.
 */
export interface CursorConfig {
  /** The HMAC secret of every cursor and page token (see {@link readCursorSecret}). */
  readonly cursorSecret: string;
  /**
   * How long a change-feed cursor stays resumable (see
   * {@link readFeedCursorTtlMs}); the execution service prunes the feed a
   * day after it, so no cursor outlives the entries it resumes from.
   */
  readonly feedCursorTtlMs: number;
}

/** Reads {@link CursorConfig}: DOCKET_CURSOR_SECRET and DOCKET_FEED_CURSOR_TTL_SECONDS, the one way both services read them. */
export function readCursorConfig(env: Environment): CursorConfig {
  return { cursorSecret: readCursorSecret(env), feedCursorTtlMs: readFeedCursorTtlMs(env) };
}

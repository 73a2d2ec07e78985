import { readCursorSecret, readFeedCursorTtlMs, readFrontServiceConfig, readPositiveInteger, type Environment, type FrontServiceConfig } from '@docket/service-kit';

/** The events service's configuration, read from the environment only. */
export interface EventsConfig extends FrontServiceConfig {
  /** HMAC secret of change-feed cursors (shared with admission's snapshot cursors). */
  readonly cursorSecret: string;
  /** How long a stream may stay silent before it sends a heartbeat. */
  readonly heartbeatMs: number;
  /** How long a change-feed cursor stays resumable. */
  readonly feedCursorTtlMs: number;
}

/** Default port of the events service (SPEC section 12). */
export const EVENTS_DEFAULT_PORT = 7403;

/** The SPEC's heartbeat interval: 15 s. */
const DEFAULT_HEARTBEAT_MS = 15_000;

/**
 * Reads the front-service settings plus DOCKET_CURSOR_SECRET,
 * DOCKET_HEARTBEAT_MS (default 15000) and DOCKET_FEED_CURSOR_TTL_SECONDS
 * (default 604800, 7 days).
 */
export function readEventsConfig(env: Environment): EventsConfig {
  return {
    ...readFrontServiceConfig(env, EVENTS_DEFAULT_PORT),
    cursorSecret: readCursorSecret(env),
    heartbeatMs: readPositiveInteger(env, 'DOCKET_HEARTBEAT_MS', DEFAULT_HEARTBEAT_MS),
    feedCursorTtlMs: readFeedCursorTtlMs(env),
  };
}

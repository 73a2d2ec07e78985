import { readCursorConfig, readFrontServiceConfig, readPositiveInteger, type CursorConfig, type Environment, type FrontServiceConfig } from '@docket/service-kit';

/**
 * The events service's configuration, read from the environment only. Its
 * cursor settings are the admission service's, whose snapshot cursors it
 * resumes WatchJobs from.
 */
export interface EventsConfig extends FrontServiceConfig, CursorConfig {
  /** How long a stream may stay silent before it sends a heartbeat. */
  readonly heartbeatMs: number;
}

/** Default port of the events service (SPEC section 12). */
export const EVENTS_DEFAULT_PORT = 7403;

/** The SPEC's heartbeat interval: 15 s. */
const DEFAULT_HEARTBEAT_MS = 15_000;

/**
 * Reads the front-service settings, the cursor settings
 * (DOCKET_CURSOR_SECRET, DOCKET_FEED_CURSOR_TTL_SECONDS, default 604800,
 * 7 days) and DOCKET_HEARTBEAT_MS (default 15000).
 */
export function readEventsConfig(env: Environment): EventsConfig {
  return {
    ...readFrontServiceConfig(env, EVENTS_DEFAULT_PORT),
    ...readCursorConfig(env),
    heartbeatMs: readPositiveInteger(env, 'DOCKET_HEARTBEAT_MS', DEFAULT_HEARTBEAT_MS),
  };
}

import type { ServiceName } from './service-names.js';

/** What a set of Docket services shares, before each takes what it needs. */
export interface DocketServiceSettings {
  /** HS256 secret every service verifies bearer tokens with. */
  readonly authSecret: string;
  /** Secret that signs page tokens and watch cursors. */
  readonly cursorSecret: string;
  /** The secret admission, execution and events sign their short-lived tokens to state with, and state verifies them with. */
  readonly serviceAuthSecret: string;
  /** The Postgres the state service uses (and migrates at start). */
  readonly databaseUrl: string;
}

/**
 * The `DOCKET_*` variables one service process is configured by (SPEC
 * section 12): each service gets only what it reads. `listen` is
 * `host:port` (port 0 allowed); `stateUrl` is required for every service but
 * state, which is the only one given the database URL.
 */
export function serviceEnvironment(
  name: ServiceName,
  settings: DocketServiceSettings,
  listen: string,
  stateUrl?: string,
): Record<string, string> {
  const env: Record<string, string> = {
    DOCKET_LISTEN: listen,
    DOCKET_SERVICE_AUTH_SECRET: settings.serviceAuthSecret,
  };
  if (name === 'state') {
    env['DOCKET_DATABASE_URL'] = settings.databaseUrl;
    return env;
  }
  env['DOCKET_AUTH_SECRET'] = settings.authSecret;
  env['DOCKET_CURSOR_SECRET'] = settings.cursorSecret;
  if (stateUrl === undefined) throw new Error(`the ${name} service needs the state service's URL`);
  env['DOCKET_STATE_URL'] = stateUrl;
  return env;
}

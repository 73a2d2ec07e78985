import { readListenAddress, readShutdownGraceMs, requireEnv, type Environment } from './environment.js';

/**
 * What every public service (admission, execution, events) needs: where to
 * listen, where the state service is and the credentials for both hops.
 */
export interface FrontServiceConfig {
  readonly listen: { readonly host: string; readonly port: number };
  readonly stateUrl: string;
  readonly authSecret: string;
  readonly serviceToken: string;
  readonly shutdownGraceMs: number;
}

/** The state service's default address (SPEC section 12). */
export const DEFAULT_STATE_URL = 'http://127.0.0.1:7404';

/**
 * Reads DOCKET_LISTEN (default 127.0.0.1:`defaultPort`), DOCKET_STATE_URL,
 * DOCKET_AUTH_SECRET, DOCKET_SERVICE_TOKEN and DOCKET_SHUTDOWN_GRACE_MS.
 */
export function readFrontServiceConfig(env: Environment, defaultPort: number): FrontServiceConfig {
  return {
    listen: readListenAddress(env, defaultPort),
    stateUrl: env['DOCKET_STATE_URL'] || DEFAULT_STATE_URL,
    authSecret: requireEnv(env, 'DOCKET_AUTH_SECRET'),
    serviceToken: requireEnv(env, 'DOCKET_SERVICE_TOKEN'),
    shutdownGraceMs: readShutdownGraceMs(env),
  };
}

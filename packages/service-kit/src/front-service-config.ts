import type { StateBatchOptions } from './batching-state-client.js';
import { readListenAddress, readPositiveInteger, readShutdownGraceMs, requireEnv, type Environment } from './environment.js';

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
  /** How calls to the state service are coalesced (DOCKET_STATE_BATCH_MAX, DOCKET_STATE_BATCHES_IN_FLIGHT). */
  readonly stateBatch: StateBatchOptions;
}

/** The state service's default address (SPEC section 12). */
export const DEFAULT_STATE_URL = 'http://127.0.0.1:7404';

/**
 * Reads DOCKET_LISTEN (default 127.0.0.1:`defaultPort`), DOCKET_STATE_URL,
 * DOCKET_AUTH_SECRET, DOCKET_SERVICE_TOKEN, DOCKET_SHUTDOWN_GRACE_MS,
 * DOCKET_STATE_BATCH_MAX (default 128, at most 256) and
 * DOCKET_STATE_BATCHES_IN_FLIGHT (default 1).
 */
export function readFrontServiceConfig(env: Environment, defaultPort: number): FrontServiceConfig {
  return {
    listen: readListenAddress(env, defaultPort),
    stateUrl: env['DOCKET_STATE_URL'] || DEFAULT_STATE_URL,
    authSecret: requireEnv(env, 'DOCKET_AUTH_SECRET'),
    serviceToken: requireEnv(env, 'DOCKET_SERVICE_TOKEN'),
    shutdownGraceMs: readShutdownGraceMs(env),
    stateBatch: {
      maxBatch: Math.min(256, readPositiveInteger(env, 'DOCKET_STATE_BATCH_MAX', 128)),
      maxInFlight: readPositiveInteger(env, 'DOCKET_STATE_BATCHES_IN_FLIGHT', 1),
    },
  };
}

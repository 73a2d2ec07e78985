import { readListenAddress, readShutdownGraceMs, requireEnv } from '@docket/service-kit';

/** The execution service's configuration, read from the environment only. */
export interface ExecutionConfig {
  readonly listen: { readonly host: string; readonly port: number };
  readonly stateUrl: string;
  readonly authSecret: string;
  readonly serviceToken: string;
  readonly shutdownGraceMs: number;
}

/** Default port of the execution service (SPEC section 12). */
export const EXECUTION_DEFAULT_PORT = 7402;

/** Reads DOCKET_LISTEN, DOCKET_STATE_URL, DOCKET_AUTH_SECRET, DOCKET_SERVICE_TOKEN, DOCKET_SHUTDOWN_GRACE_MS. */
export function readExecutionConfig(env: NodeJS.ProcessEnv): ExecutionConfig {
  return {
    listen: readListenAddress(env, EXECUTION_DEFAULT_PORT),
    stateUrl: env['DOCKET_STATE_URL'] || 'http://127.0.0.1:7404',
    authSecret: requireEnv(env, 'DOCKET_AUTH_SECRET'),
    serviceToken: requireEnv(env, 'DOCKET_SERVICE_TOKEN'),
    shutdownGraceMs: readShutdownGraceMs(env),
  };
}

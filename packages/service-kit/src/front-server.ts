import type { DescService } from '@bufbuild/protobuf';
import type { ConnectRouter } from '@connectrpc/connect';
import { serviceTokenSource, type Role } from '@docket/auth';
import { serviceHealthProbe } from './dependency-health.js';
import type { FrontServiceConfig } from './front-service-config.js';
import type { Logger } from './logger.js';
import { startServer, type RunningServer } from './server.js';
import type { ServiceMetrics } from './service-metrics.js';
import { createServiceTransport, type ServiceTransport } from './service-transport.js';

/** The public services, each of which calls the state service. */
export type FrontServiceName = 'admission' | 'execution' | 'events';

/**
 * A front service's one transport to the state service: `config.stateUrl`,
 * with short-lived service tokens whose subject is `service`, signed with
 * `DOCKET_SERVICE_AUTH_SECRET`, and `DOCKET_STATE_CALL_TIMEOUT_MS` as the
 * deadline of a call whose caller set none.
 */
export function stateTransportOf(config: FrontServiceConfig, service: FrontServiceName): ServiceTransport {
  return createServiceTransport({
    baseUrl: config.stateUrl,
    token: serviceTokenSource(config.serviceAuthSecret, service, { ttlSeconds: config.serviceTokenTtlSeconds }),
    defaultDeadlineMs: config.stateCallTimeoutMs,
  });
}

/** What {@link startFrontServer} needs besides the service's configuration. */
export interface FrontServerOptions {
  readonly name: FrontServiceName;
  /** The Docket service this process serves, and its implementation. */
  readonly services: readonly DescService[];
  readonly routes: (router: ConnectRouter) => void;
  /** The roles whose public tokens may call `services` (health and reflection are open). */
  readonly allowedRoles: readonly Role[];
  /** The transport from {@link stateTransportOf}: while the state service does not answer, health reports NOT_SERVING. */
  readonly stateTransport: ServiceTransport;
  readonly logger: Logger;
  /** The process's metrics, when the service registers its own; one is made otherwise. */
  readonly metrics?: ServiceMetrics;
  /** Begun as soon as shutdown begins, before the server drains; awaited once it has drained, before `close`. */
  readonly stopFirst?: () => Promise<void> | undefined;
  /**
   * Closes what the routes use and was opened before the server (a change
   * stream): when the server fails to start, and once it has drained.
   */
  readonly close?: () => Promise<void>;
}

/**
 * Starts a public service the one way all three start: `startServer` on
 * `config.listen` with the `<name>RequestBytes` bound, the configured CORS
 * origins, bearer authentication by `DOCKET_AUTH_SECRET` and/or
 * `DOCKET_AUTH_JWKS_FILE` under the token rules, and the state service as
 * the dependency health follows. The returned server's `shutdown` runs
 * `stopFirst`, the drain and `close` in that order, once however often it
 * is called.
 */
export async function startFrontServer(config: FrontServiceConfig, options: FrontServerOptions): Promise<RunningServer> {
  const { name, stopFirst, close } = options;
  let server: RunningServer;
  try {
    server = await startServer({
      name,
      corsOrigins: config.corsOrigins,
      requestBytes: `${name}RequestBytes`,
      ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
      listen: config.listen,
      services: options.services,
      routes: options.routes,
      authenticate: { secret: config.authSecret, publicKeys: config.authPublicKeys, rules: config.tokenRules, allowedRoles: options.allowedRoles },
      logger: options.logger,
      dependency: serviceHealthProbe('state', options.stateTransport),
    });
  } catch (error) {
    await close?.();
    throw error;
  }
  let stopping: Promise<void> | undefined;
  const stop = async (graceMs?: number): Promise<void> => {
    const stoppedFirst = stopFirst?.();
    await server.shutdown(graceMs);
    await stoppedFirst;
    await close?.();
  };
  return { ...server, shutdown: (graceMs) => (stopping ??= stop(graceMs)) };
}

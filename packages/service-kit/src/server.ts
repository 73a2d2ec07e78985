import { setMaxListeners } from 'node:events';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import type { DescService } from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  createContextValues,
  type ConnectRouter,
  type ContextValues,
  type Interceptor,
} from '@connectrpc/connect';
import { Health } from '@docket/proto/grpc/health/v1/health_pb.js';
import { ServerReflection } from '@docket/proto/grpc/reflection/v1/reflection_pb.js';
import { ServerReflection as ServerReflectionV1alpha } from '@docket/proto/grpc/reflection/v1alpha/reflection_pb.js';
import { LIMITS, type LimitName } from '@docket/contracts';
import { authenticationInterceptor, type AuthPolicy } from './authentication.js';
import { boundedNodeAdapter, chainReachedMarker } from './bounded-node-adapter.js';
import { corsPolicy } from './cors.js';
import { deadlineInterceptor } from './deadline.js';
import { drainRelayKey } from './drain-signal.js';
import { errorMappingInterceptor } from './error-interceptor.js';
import { createHealthRegistry, type HealthRegistry } from './health-registry.js';
import type { InProcessServer } from './in-process-calls.js';
import { registerHealthService } from './health-service.js';
import { watchDependency, type DependencyProbe } from './dependency-health.js';
import { ServiceMetrics } from './service-metrics.js';
import type { Logger } from './logger.js';
import { sniffProtocol } from './protocol-sniffer.js';
import { registerReflectionService } from './reflection-service.js';
import { requestBoundsInterceptor } from './request-bounds.js';
import { rpcLoggingInterceptor } from './rpc-logging-interceptor.js';
import { SignalRelay } from './signal-relay.js';
import { tracingInterceptor } from './tracing.js';
import { unknownRouteFallback } from './unknown-route.js';

/** The default grace period of {@link RunningServer.shutdown}. */
export const DEFAULT_GRACE_MS = 10_000;

/** How long a new connection may stay silent before its first bytes. */
const FIRST_BYTES_TIMEOUT_MS = 10_000;

/** After the grace period, how long aborted handlers get to write their final status. */
const HARD_STOP_FLUSH_MS = 100;

/**
 * HTTP/2 limits of every Docket server. Streams per session: a front
 * service's client (a worker, an SDK) needs a handful, but the state
 * service carries every front replica's calls on a few sessions, so it
 * allows more. Header lists are small (a bearer token, a traceparent).
 * Sessions with no frames for {@link SESSION_IDLE_TIMEOUT_MS} are closed
 * with GOAWAY (long polls and streams send frames well within it).
 */
const HTTP2_LIMITS = {
  /** Concurrent streams a front service allows per session. */
  frontConcurrentStreams: 1_000,
  /** Concurrent streams the state service allows per session. */
  stateConcurrentStreams: 20_000,
  /** `maxSessionMemory`, in MB: buffered outgoing data and unacknowledged frames per session, beyond which new streams are refused. */
  sessionMemoryMb: 32,
  /** Largest header list, in bytes. */
  headerListBytes: 65_536,
  /**
   * The connection-level receive window. Node consumes connection-level
   * flow control as soon as DATA arrives, so this bounds no memory (each
   * stream's 64 KiB window does: what a stream whose handler is not
   * reading can make the server buffer); it only caps what all of a
   * session's uploads together may have in flight. The HTTP/2 default of
   * 64 KiB made uploads crawl when several ran at once, as the rest of a
   * refused request's body does while it is discarded (see
   * `boundedNodeAdapter`).
   */
  connectionWindowBytes: 16 * 1024 * 1024,
} as const;

/** How long an HTTP/2 session or HTTP/1.1 connection may carry nothing before it is closed. */
const SESSION_IDLE_TIMEOUT_MS = 5 * 60_000;

/** How long an HTTP/1.1 client has to send one complete request (slow uploads are cut off). */
const HTTP1_REQUEST_TIMEOUT_MS = 60_000;

/** Services every Docket server answers without authentication. */
const INFRASTRUCTURE_SERVICES: readonly DescService[] = [Health, ServerReflection, ServerReflectionV1alpha];

/** What {@link startServer} needs to run one Docket service. */
export interface ServerOptions {
  /** The service's short name (`state`, `admission`, `execution`, `events`), used in startup errors. */
  readonly name: string;
  /** Where to listen; port 0 lets the OS choose (see {@link RunningServer.port}). */
  readonly listen: { readonly host: string; readonly port: number };
  /**
   * The Docket services this process serves. Health reports each by its
   * fully-qualified name and reflection describes them; each must be
   * registered by `routes`, and `routes` may register nothing else.
   */
  readonly services: readonly DescService[];
  /** Registers the implementations of `services`. */
  readonly routes: (router: ConnectRouter) => void;
  /** Who may call `services` (health and reflection are open). */
  readonly authenticate: AuthPolicy;
  readonly logger: Logger;
  /** Extra interceptors, run inside logging, error mapping, authentication and the deadline check. */
  readonly interceptors?: readonly Interceptor[];
  /** What the service cannot serve without: while it fails, health reports NOT_SERVING (see `watchDependency`). */
  readonly dependency?: DependencyProbe;
  /** The process's metrics (`GET /metrics`); one is made when not given. */
  readonly metrics?: ServiceMetrics;
  /**
   * The `LIMITS` entry bounding one request message of this service, as
   * sent and after decompression (`admissionRequestBytes`,
   * `executionRequestBytes`, `eventsRequestBytes`, `stateRequestBytes`);
   * default `admissionRequestBytes`.
   */
  readonly requestBytes?: LimitName;
  /** Browser origins allowed to call cross-origin (see `corsPolicy`; a front service passes its `corsOrigins`); default none. */
  readonly corsOrigins?: readonly string[];
}

/** A listening server. */
export interface RunningServer {
  /** `http://host:port`, with the port actually bound. */
  readonly url: string;
  readonly port: number;
  /** The statuses `grpc.health.v1.Health` reports; set NOT_SERVING while a dependency is down. */
  readonly health: HealthRegistry;
  /** The process's Prometheus metrics, served on `GET /metrics`. */
  readonly metrics: ServiceMetrics;
  /** What callers in this process need to call it in memory (`answerInProcess`). */
  readonly inProcess: InProcessServer;
  /**
   * Calls that listen to the drain or the hard stop (every binary gRPC
   * stream, and every call that asked for its drain signal) and have not
   * ended: once they end, they hold nothing.
   */
  readonly callsInFlight: () => number;
  /**
   * Graceful shutdown: health turns NOT_SERVING for every name (Watch
   * streams receive it and end), the drain signal aborts, the port stops
   * accepting, HTTP/2 sessions get GOAWAY and close once their streams are
   * done, idle HTTP/1.1 connections close. After `graceMs` (default
   * {@link DEFAULT_GRACE_MS}) handler signals abort with UNAVAILABLE and,
   * {@link HARD_STOP_FLUSH_MS} later, remaining sessions and sockets are
   * destroyed. Resolves when every connection is gone; calling it again
   * returns the same promise.
   */
  shutdown(graceMs?: number): Promise<void>;
}

/**
 * Starts a Docket service: gRPC, gRPC-Web and Connect over cleartext HTTP/2
 * and Connect unary over HTTP/1.1, all on one port, with health, reflection,
 * bearer authentication, error mapping, deadline refusal and one log line
 * per RPC (successes at `debug`, see `rpcLoggingInterceptor`). Logs
 * `{msg: "listening", url}` once the port is bound.
 *
 * Interceptor order, outermost first: tracing (a SERVER span continuing
 * the caller's `traceparent`), metrics, RPC logging, error mapping,
 * authentication, deadline check, request bounds (`requestBoundsInterceptor`),
 * then `options.interceptors`.
 *
 * Bounded inputs (SPEC section 9): a request message is read only up to
 * `options.requestBytes`, compressed and decompressed, and Connect's own
 * decode failures are INVALID_ARGUMENT with ErrorInfo (see
 * `boundedNodeAdapter`); HTTP/2 sessions are limited by {@link HTTP2_LIMITS}.
 */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const { logger } = options;
  const health = createHealthRegistry(options.services.map((service) => service.typeName));
  // Calls listen to both through a Set (see SignalRelay), not as listeners
  // of one AbortSignal: ten thousand open streams must not make each new
  // call walk ten thousand listeners.
  const draining = new SignalRelay();
  const hardStop = new SignalRelay();
  // Connect's unary handlers still link to the hard stop's shared signal, as do
  // streams over the Connect and gRPC-Web protocols.
  setMaxListeners(0, hardStop.signal);

  const metrics = options.metrics ?? new ServiceMetrics(options.name);
  const callValues = (): ContextValues => createContextValues().set(drainRelayKey, draining);
  const requestBytes = options.requestBytes ?? 'admissionRequestBytes';
  const handlers = boundedNodeAdapter({
    requestBytes,
    routes(router) {
      registerHealthService(router, health);
      registerReflectionService(router, [...options.services, ...INFRASTRUCTURE_SERVICES]);
      options.routes(router);
      assertRoutedServicesMatch(options.name, router, options.services);
    },
    interceptors: [
      chainReachedMarker(),
      tracingInterceptor(),
      metrics.interceptor,
      rpcLoggingInterceptor(logger),
      errorMappingInterceptor(logger),
      authenticationInterceptor(
        options.authenticate,
        new Set(INFRASTRUCTURE_SERVICES.map((service) => service.typeName)),
      ),
      deadlineInterceptor(),
      requestBoundsInterceptor(requestBytes),
      ...(options.interceptors ?? []),
    ],
    fallback: unknownRouteFallback(logger),
    shutdown: hardStop,
    contextValues: callValues,
  });
  // The internal state service is never called from a browser.
  const cors = corsPolicy(options.corsOrigins ?? []);
  const handler = (request: http.IncomingMessage | http2.Http2ServerRequest, response: http.ServerResponse | http2.Http2ServerResponse): void => {
    if (cors.answer(request, response)) return;
    if (!metrics.serve(request, response)) handlers.handle(request as http.IncomingMessage, response as http.ServerResponse);
  };

  const sessions = new Set<http2.ServerHttp2Session>();
  const sockets = new Set<net.Socket>();
  const sniffing = new Set<() => void>();

  const h2 = http2.createServer(
    {
      maxSessionMemory: HTTP2_LIMITS.sessionMemoryMb,
      maxHeaderListPairs: 128,
      settings: {
        maxConcurrentStreams: options.name === 'state' ? HTTP2_LIMITS.stateConcurrentStreams : HTTP2_LIMITS.frontConcurrentStreams,
        maxHeaderListSize: HTTP2_LIMITS.headerListBytes,
      },
    },
    handler,
  );
  // Binary gRPC unary calls are served from their stream; Node's own listener
  // (which makes the compatibility request and response for `handler`) gets the rest.
  const compatibility = h2.listeners('stream') as ((...args: unknown[]) => void)[];
  if (compatibility.length !== 1) throw new Error(`expected Node's one compatibility stream listener, found ${compatibility.length}`);
  h2.removeAllListeners('stream');
  h2.on('stream', (stream, headers, ...rest) => {
    if (!handlers.unaryStream(stream, headers)) compatibility[0]!.call(h2, stream, headers, ...rest);
  });
  h2.on('session', (session) => {
    session.setTimeout(SESSION_IDLE_TIMEOUT_MS, () => session.close());
    if (!session.destroyed) session.setLocalWindowSize(HTTP2_LIMITS.connectionWindowBytes);
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  // A peer that goes away mid-session (a worker exiting, a client killed)
  // is routine: note it, do not warn about it.
  h2.on('sessionError', (error) => {
    const code = errorCode(error);
    const routine = code === 'ECONNRESET' || code === 'EPIPE' || code === 'ERR_HTTP2_SESSION_ERROR';
    (routine ? logger.info : logger.warn).call(logger, 'http2 session error', { error_code: code });
  });
  const h1 = http.createServer(
    { maxHeaderSize: HTTP2_LIMITS.headerListBytes, requestTimeout: HTTP1_REQUEST_TIMEOUT_MS },
    handler,
  );
  h1.setTimeout(SESSION_IDLE_TIMEOUT_MS);
  h1.on('clientError', (_error, socket) => socket.destroy());

  const listener = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    // Resets and the like are normal; the HTTP servers handle what follows.
    socket.on('error', () => {});
    const destroyIfSniffing = sniffProtocol(
      socket,
      {
        http2: (s) => {
          sniffing.delete(destroyIfSniffing);
          h2.emit('connection', s);
        },
        http1: (s) => {
          sniffing.delete(destroyIfSniffing);
          h1.emit('connection', s);
        },
      },
      FIRST_BYTES_TIMEOUT_MS,
    );
    sniffing.add(destroyIfSniffing);
    socket.once('close', () => sniffing.delete(destroyIfSniffing));
  });

  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(options.listen.port, options.listen.host, () => {
      listener.off('error', reject);
      resolve();
    });
  });
  listener.on('error', (error) => logger.error('listener error', { error_code: errorCode(error) }));

  const address = listener.address();
  if (address === null || typeof address === 'string') throw new Error('listener has no TCP address');
  const port = address.port;
  const host = options.listen.host.includes(':') ? `[${options.listen.host}]` : options.listen.host;
  const url = `http://${host}:${port}`;
  logger.info('listening', { url });
  if (options.dependency) watchDependency(health, options.services.map((service) => service.typeName), options.dependency, logger, draining.signal);

  let stopping: Promise<void> | undefined;
  const stop = async (graceMs: number): Promise<void> => {
    logger.info('shutting down', { grace_ms: graceMs });
    health.shutdown();
    draining.abort();
    const closed = new Promise<void>((resolve) => listener.close(() => resolve()));
    for (const destroy of [...sniffing]) destroy();
    for (const session of sessions) session.close();
    h1.closeIdleConnections();
    const idleSweep = setInterval(() => h1.closeIdleConnections(), 50);
    let graceTimer: NodeJS.Timeout | undefined;
    try {
      const drained = await Promise.race([
        closed.then(() => true),
        new Promise<false>((resolve) => (graceTimer = setTimeout(() => resolve(false), graceMs))),
      ]);
      if (!drained) {
        logger.warn('grace period over, closing connections', {
          sessions: sessions.size,
          connections: sockets.size,
        });
        hardStop.abort(new ConnectError('server is shutting down', Code.Unavailable));
        await Promise.race([closed, delay(HARD_STOP_FLUSH_MS)]);
        for (const session of sessions) session.destroy();
        for (const socket of sockets) socket.destroy();
        await closed;
      }
    } finally {
      clearInterval(idleSweep);
      clearTimeout(graceTimer);
    }
  };

  return {
    url,
    port,
    health,
    metrics,
    inProcess: { url, handlers: handlers.universal, unary: handlers.inMemoryUnary, contextValues: callValues, readMaxBytes: LIMITS[requestBytes] },
    callsInFlight: () => draining.listeners + hardStop.listeners,
    shutdown: (graceMs = DEFAULT_GRACE_MS) => (stopping ??= stop(graceMs)),
  };
}

/**
 * Fails startup when `routes` registered a service not listed in `services`
 * (health and reflection would not know it) or left a listed one out
 * (health would report SERVING for a service that answers nothing).
 */
function assertRoutedServicesMatch(name: string, router: ConnectRouter, services: readonly DescService[]): void {
  const infrastructure = new Set(INFRASTRUCTURE_SERVICES.map((s) => s.typeName));
  const listed = new Set(services.map((s) => s.typeName));
  const routed = new Set(router.handlers.map((h) => h.service.typeName));
  for (const service of routed) {
    if (!listed.has(service) && !infrastructure.has(service)) {
      throw new Error(`${name} server: service ${service} is routed but not listed in ServerOptions.services`);
    }
  }
  for (const service of listed) {
    if (!routed.has(service)) {
      throw new Error(`${name} server: service ${service} is listed in ServerOptions.services but not routed`);
    }
  }
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  return typeof error.code === 'string' ? error.code : undefined;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

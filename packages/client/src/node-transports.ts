import type { Interceptor, Transport } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { tracedCalls } from '@docket/trace-context';

/** Default admission address (SPEC §12: admission 7401). */
export const DEFAULT_ADMISSION_URL = 'http://127.0.0.1:7401';
/** Default events address (SPEC §12: events 7403). */
export const DEFAULT_EVENTS_URL = 'http://127.0.0.1:7403';

/**
 * A bearer token, or a function returning the current one (called before
 * every request, so a long-lived client can rotate short-lived tokens).
 */
export type TokenSource = string | (() => string | Promise<string>);

/** The two transports a {@link DocketClient} uses. */
export interface DocketTransports {
  /** To `docket.admission.v1.AdmissionService`. */
  readonly admission: Transport;
  /** To `docket.events.v1.EventService`. */
  readonly events: Transport;
}

/** Where the services are and who calls them. */
export interface NodeTransportOptions {
  /**
   * A base address (`http://host` or `https://host`) whose port, when it
   * has none, is filled in per service: admission at 7401, events at 7403.
   * Default `http://127.0.0.1`.
   */
  readonly url?: string;
  /** The admission service's full address; overrides `url`. */
  readonly admissionUrl?: string;
  /** The events service's full address; overrides `url`. */
  readonly eventsUrl?: string;
  /** Sent as `authorization: Bearer <token>` on every call. */
  readonly token: TokenSource;
}

/** Node transports plus the means to close their HTTP/2 sessions. */
export interface NodeTransports extends DocketTransports {
  /** Closes both HTTP/2 sessions; calls in flight fail. */
  close(): void;
}

/**
 * An interceptor that sends `authorization: Bearer <token>`, for any
 * Connect transport (pass it to connect-web's `createGrpcWebTransport` in
 * a browser). The token is never put anywhere else.
 */
export function bearerAuth(token: TokenSource): Interceptor {
  return (next) => async (request) => {
    const value = typeof token === 'string' ? token : await token();
    request.header.set('authorization', `Bearer ${value}`);
    return next(request);
  };
}

/**
 * gRPC transports for Node (connect-node, HTTP/2: h2c for `http://`, TLS
 * for `https://`) to admission and events, authenticated with `token`.
 * Each HTTP/2 session is pinged every 15 s so that a dead connection is
 * noticed during a quiet stream. Each call continues the caller's
 * OpenTelemetry trace, if any (see `tracedCalls`). Browsers cannot use these: build a
 * connect-web transport with {@link bearerAuth} and pass it as
 * `transports` instead.
 */
export function createNodeTransports(options: NodeTransportOptions): NodeTransports {
  const admissionUrl = options.admissionUrl ?? withDefaultPort(options.url, DEFAULT_ADMISSION_URL);
  const eventsUrl = options.eventsUrl ?? withDefaultPort(options.url, DEFAULT_EVENTS_URL);
  const interceptors = [bearerAuth(options.token), tracedCalls('@docket/client')];
  const sessions = [admissionUrl, eventsUrl].map(
    (url) => new Http2SessionManager(url, { pingIntervalMs: 15_000, pingTimeoutMs: 10_000 }),
  );
  const [admissionSession, eventsSession] = sessions as [Http2SessionManager, Http2SessionManager];
  return {
    admission: createGrpcTransport({ baseUrl: admissionUrl, sessionManager: admissionSession, interceptors }),
    events: createGrpcTransport({ baseUrl: eventsUrl, sessionManager: eventsSession, interceptors }),
    close: () => sessions.forEach((session) => session.abort()),
  };
}

function withDefaultPort(base: string | undefined, fallback: string): string {
  if (base === undefined) return fallback;
  const url = new URL(base);
  if (url.port === '') url.port = new URL(fallback).port;
  return url.origin;
}

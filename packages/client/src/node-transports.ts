import { SDK_KEEPALIVE } from '@docket/client-kit';
import { createServiceConnection } from '@docket/client-kit/node';
import { bearerAuth, DEFAULT_ADMISSION_URL, DEFAULT_EVENTS_URL, type DocketTransports, type NodeTransportOptions } from './transports.js';

/** Node transports plus the means to close their HTTP/2 sessions. */
export interface NodeTransports extends DocketTransports {
  /** Closes both HTTP/2 sessions; calls in flight fail. */
  close(): void;
}

/**
 * gRPC transports for Node (connect-node, HTTP/2: h2c for `http://`, TLS
 * for `https://`) to admission and events, authenticated with `token`.
 * Each HTTP/2 session is pinged (`SDK_KEEPALIVE`: every 15 s) so that a
 * dead connection is noticed during a quiet stream. Each call continues
 * the caller's OpenTelemetry trace, if any (see `tracedCalls`). Browsers
 * cannot use these: build a connect-web transport with {@link bearerAuth}
 * and pass it as `transports` instead.
 */
export function createNodeTransports(options: NodeTransportOptions): NodeTransports {
  const admissionUrl = options.admissionUrl ?? withDefaultPort(options.url, DEFAULT_ADMISSION_URL);
  const eventsUrl = options.eventsUrl ?? withDefaultPort(options.url, DEFAULT_EVENTS_URL);
  const connect = (baseUrl: string) => createServiceConnection({ baseUrl, token: options.token, tracerName: '@docket/client', keepalive: SDK_KEEPALIVE });
  const admission = connect(admissionUrl);
  const events = connect(eventsUrl);
  return {
    admission: admission.transport,
    events: events.transport,
    close: () => [admission, events].forEach((connection) => connection.session.abort()),
  };
}

function withDefaultPort(base: string | undefined, fallback: string): string {
  if (base === undefined) return fallback;
  const url = new URL(base);
  if (url.port === '') url.port = new URL(fallback).port;
  return url.origin;
}

import type * as http from 'node:http';
import type * as http2 from 'node:http2';
import type { Environment } from './environment.js';

/**
 * The browser origins a Docket server answers cross-origin calls from when
 * `DOCKET_CORS_ORIGINS` is not set: the web console as `npm start` serves
 * it (`DOCKET_CONSOLE_PORT`, default 7405), by address and by name.
 */
export const DEFAULT_CORS_ORIGINS: readonly string[] = ['http://127.0.0.1:7405', 'http://localhost:7405'];

/**
 * Request headers a Connect-Web client (gRPC-Web or Connect protocol)
 * sends, plus the bearer token and W3C trace context.
 */
const ALLOWED_HEADERS = [
  'authorization',
  'content-type',
  'connect-protocol-version',
  'connect-timeout-ms',
  'connect-accept-encoding',
  'connect-content-encoding',
  'grpc-timeout',
  'grpc-accept-encoding',
  'x-grpc-web',
  'x-user-agent',
  'traceparent',
  'tracestate',
].join(', ');

/** Response headers a Connect-Web client must be able to read: the gRPC status and its details (trailers-only answers carry them as headers). */
const EXPOSED_HEADERS = ['grpc-status', 'grpc-message', 'grpc-status-details-bin', 'grpc-encoding', 'connect-content-encoding', 'x-request-id'].join(', ');

/** How long a browser may cache a preflight answer, in seconds. */
const PREFLIGHT_MAX_AGE_S = 7_200;

type AnyRequest = http.IncomingMessage | http2.Http2ServerRequest;
type AnyResponse = http.ServerResponse | http2.Http2ServerResponse;

/** Cross-origin access for browsers, as {@link corsPolicy} builds it. */
export interface CorsPolicy {
  /** The exact origins allowed (scheme, host and port; no wildcard). */
  readonly origins: ReadonlySet<string>;
  /**
   * Adds the CORS response headers when the request comes from an allowed
   * origin, and answers a preflight (`OPTIONS` with
   * `access-control-request-method`) itself: 204 for an allowed origin,
   * 403 with no CORS headers for any other. Returns true when it answered
   * the request (the caller must then do nothing more with it).
   */
  answer(request: AnyRequest, response: AnyResponse): boolean;
}

/**
 * `DOCKET_CORS_ORIGINS`: a comma-separated list of exact origins
 * (`http://127.0.0.1:7405,https://console.example.com`), `none` to allow
 * no cross-origin caller, unset or empty for {@link DEFAULT_CORS_ORIGINS}.
 * An entry that is not a bare origin (a path, a `*`, a trailing slash) is
 * refused at startup rather than silently ignored.
 */
export function readCorsOrigins(env: Environment): readonly string[] {
  const raw = (env['DOCKET_CORS_ORIGINS'] ?? '').trim();
  if (raw === '') return DEFAULT_CORS_ORIGINS;
  if (raw === 'none') return [];
  return raw.split(',').map((entry) => {
    const origin = entry.trim();
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    if (parsed === undefined || parsed.origin !== origin || !/^https?:$/.test(parsed.protocol)) {
      throw new Error(`DOCKET_CORS_ORIGINS: ${JSON.stringify(origin)} is not an origin (scheme://host[:port], no path, no wildcard)`);
    }
    return origin;
  });
}

/**
 * CORS for the browser origins given: what a Connect-Web client needs to
 * call this server from another origin (the console on its own port).
 * Credentials (cookies) are never allowed: callers authenticate with a
 * bearer token in `authorization`, which a page of another origin cannot
 * read or send on the user's behalf.
 */
export function corsPolicy(origins: readonly string[]): CorsPolicy {
  const allowed = new Set(origins);
  return {
    origins: allowed,
    answer(request, response) {
      const origin = request.headers['origin'];
      const fromAllowed = typeof origin === 'string' && allowed.has(origin);
      const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined;
      if (fromAllowed) {
        response.setHeader('access-control-allow-origin', origin);
        response.setHeader('vary', 'origin');
        response.setHeader('access-control-expose-headers', EXPOSED_HEADERS);
      }
      if (!preflight) return false;
      if (fromAllowed) {
        response.setHeader('access-control-allow-methods', 'GET, POST');
        response.setHeader('access-control-allow-headers', ALLOWED_HEADERS);
        response.setHeader('access-control-max-age', String(PREFLIGHT_MAX_AGE_S));
      }
      response.statusCode = fromAllowed ? 204 : 403;
      response.end();
      return true;
    },
  };
}

import { Code } from '@connectrpc/connect';
import type { ConnectNodeAdapterOptions } from '@connectrpc/connect-node';
import { errorToJsonBytes } from '@connectrpc/connect/protocol-connect';
import { setTrailerStatus } from '@connectrpc/connect/protocol-grpc';
import { docketConnectError } from './error-mapping.js';
import type { Logger } from './logger.js';
import { requestIdFrom } from './request-id.js';

type Fallback = NonNullable<ConnectNodeAdapterOptions['fallback']>;

/**
 * Answers a request for a path no route serves (an unknown service or
 * method) like any other Docket failure: `UNIMPLEMENTED` with `ErrorInfo`
 * reason `UNIMPLEMENTED` (in trailers for gRPC, trailers-only for
 * gRPC-Web, a 404 Connect error JSON otherwise), and logs it as an `rpc`
 * line.
 * Connect's own fallback answers a bare HTTP 404 that gRPC clients turn
 * into an UNIMPLEMENTED without details, and that no interceptor sees.
 */
export function unknownRouteFallback(logger: Logger): Fallback {
  return (request, response) => {
    request.resume();
    const error = docketConnectError({ code: Code.Unimplemented, reason: 'UNIMPLEMENTED', message: 'unimplemented' });
    const header = (name: string): string | undefined => {
      const value = request.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    logger.info('rpc', {
      rpc: (request.url ?? '').split('?', 1)[0]!.slice(0, 256),
      code: 'unimplemented',
      reason: 'UNIMPLEMENTED',
      latency_ms: 0,
      request_id: requestIdFrom(new Headers({ 'x-request-id': header('x-request-id') ?? '' })),
    });
    const contentType = header('content-type') ?? '';
    const status = Object.fromEntries(setTrailerStatus(new Headers(), error));
    if (/^application\/grpc([+;]|$)/.test(contentType)) {
      // Status in real trailers: grpc-js honours a status in the headers
      // only on a HEADERS frame that ends the stream, which Node's
      // compatibility API does not send.
      response.writeHead(200, { 'content-type': contentType });
      response.addTrailers(status);
      response.end();
      return;
    }
    if (/^application\/grpc-web/.test(contentType)) {
      response.writeHead(200, { ...status, 'content-type': contentType });
      response.end();
      return;
    }
    const body = errorToJsonBytes(error, undefined);
    response.writeHead(404, { 'content-type': 'application/json', 'content-length': String(body.byteLength) });
    response.end(body);
  };
}

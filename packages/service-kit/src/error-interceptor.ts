import type { Interceptor } from '@connectrpc/connect';
import { toConnectError } from './error-mapping.js';
import type { Logger } from './logger.js';
import { requestIdKey } from './request-id.js';
import { rpcPath } from './rpc-logging-interceptor.js';
import { hookStream } from '@docket/contracts';

/**
 * Maps every error leaving the handler chain through {@link toConnectError}:
 * errors thrown by unary handlers, by server-streaming handlers before or
 * between messages, and by the interceptors inside this one
 * (authentication, deadline). Installed right inside the RPC logger, so
 * nothing unmapped reaches a client or the `rpc` log line.
 */
export function errorMappingInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    const mapError = (error: unknown): unknown =>
      toConnectError(error, logger, { rpc: rpcPath(req), request_id: req.contextValues.get(requestIdKey) });
    let response;
    try {
      response = await next(req);
    } catch (error) {
      throw mapError(error);
    }
    if (!response.stream) return response;
    return { ...response, message: hookStream(response.message, { mapError }) };
  };
}

import { ConnectError, type Interceptor } from '@connectrpc/connect';
import { clientLeft, clientLeftError, toConnectError } from './error-mapping.js';
import type { Logger } from './logger.js';
import { requestIdKey } from './request-id.js';
import { rpcPath } from './rpc-logging-interceptor.js';
import { hookStream } from '@docket/contracts';

/**
 * Maps every error leaving the handler chain through {@link toConnectError}:
 * errors thrown by unary handlers, by server-streaming handlers before or
 * between messages, and by the interceptors inside this one
 * (authentication, deadline). Installed right inside the RPC logger, so
 * nothing unmapped reaches a client or the `rpc` log line. Once the
 * client has left, what its departure made the handler throw (the call's
 * abort reason, an AbortError, a failed upstream call) is CANCELLED, not
 * whatever code the reset carried: nobody is there to read it, and it is
 * no fault of the server's. Anything else (a bug) is still mapped and
 * logged as such.
 */
export function errorMappingInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    const mapError = (error: unknown): unknown =>
      clientLeft(req.signal) && (error instanceof ConnectError || (error instanceof Error && error.name === 'AbortError'))
        ? clientLeftError()
        : toConnectError(error, logger, { rpc: rpcPath(req), request_id: req.contextValues.get(requestIdKey) });
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

import { Code, ConnectError, type Interceptor, type Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { tracedCalls } from '@docket/trace-context';
import { currentRequestId, REQUEST_ID_HEADER } from './request-id.js';

/** Options of {@link createServiceTransport}. */
export interface ServiceTransportOptions {
  /** The other service's URL, e.g. `DOCKET_STATE_URL` (`http://127.0.0.1:7404`). */
  readonly baseUrl: string;
  /** The internal bearer token (role `service`), or where to get the current one (`serviceTokenSource`). */
  readonly token: string | (() => Promise<string>);
  /** Extra client interceptors, run inside the ones adding headers. */
  readonly interceptors?: readonly Interceptor[];
}

/**
 * The transport for one Docket service calling another: gRPC over cleartext
 * HTTP/2 (h2c, one multiplexed session), sending `authorization: Bearer
 * <token>` on every call and forwarding the `x-request-id` of the RPC being
 * handled, so both hops log the same id; each call is a CLIENT span of the
 * caller's trace and carries its `traceparent` (see `tracedCalls`). Pair each call with
 * `forwardDeadline(ctx)` to pass on the caller's deadline and cancellation.
 */
export function createServiceTransport(options: ServiceTransportOptions): Transport {
  const { token } = options;
  const addHeaders: Interceptor = (next) => async (req) => {
    req.header.set('authorization', `Bearer ${typeof token === 'string' ? token : await token()}`);
    const requestId = currentRequestId.getStore();
    if (requestId !== undefined && !req.header.has(REQUEST_ID_HEADER)) {
      req.header.set(REQUEST_ID_HEADER, requestId);
    }
    return next(req);
  };
  return createGrpcTransport({
    baseUrl: options.baseUrl,
    interceptors: [addHeaders, tracedCalls('@docket/service-kit'), peerLossAsUnavailable, ...(options.interceptors ?? [])],
  });
}

/**
 * When the other service dies mid-call, the HTTP/2 stream is reset and the
 * transport reports CANCELLED or ABORTED although nobody cancelled: that is
 * an unavailable peer, and callers should see UNAVAILABLE (which clients
 * retry with the same idempotency key or operation id). A cancellation the
 * caller asked for, and a Docket error (it carries ErrorInfo, e.g.
 * REVISION_MISMATCH is ABORTED), pass through unchanged.
 */
const peerLossAsUnavailable: Interceptor = (next) => async (req) => {
  try {
    return await next(req);
  } catch (error) {
    if (
      error instanceof ConnectError &&
      (error.code === Code.Canceled || error.code === Code.Aborted) &&
      !req.signal.aborted &&
      error.details.length === 0
    ) {
      throw new ConnectError('the peer service is unavailable', Code.Unavailable);
    }
    throw error;
  }
};

import { Code, ConnectError, type Interceptor, type Transport } from '@connectrpc/connect';
import { INTERNAL_KEEPALIVE, INTERNAL_RECEIVE_WINDOWS, bearerValue, type TokenSource } from '@docket/client-kit';
import { callUnaryStream, createServiceConnection, headerFields } from '@docket/client-kit/node';
import { inProcessTransportOf } from './in-process-calls.js';
import { isTracingOn } from './tracing.js';

/** Options of {@link createServiceTransport}. */
export interface ServiceTransportOptions {
  /** The other service's URL, e.g. `DOCKET_STATE_URL` (`http://127.0.0.1:7404`). */
  readonly baseUrl: string;
  /** The internal bearer token (role `service`), or where to get the current one (`serviceTokenSource`). */
  readonly token: TokenSource;
  /** The deadline of a unary call whose caller set none (default {@link DEFAULT_INTERNAL_DEADLINE_MS}; `DOCKET_STATE_CALL_TIMEOUT_MS`). */
  readonly defaultDeadlineMs?: number;
}

/** A {@link createServiceTransport} transport, with a way to give up on its connection. */
export interface ServiceTransport extends Transport {
  /**
   * Closes the HTTP/2 session at once (its calls fail UNAVAILABLE) so the
   * next call opens a new connection: for a caller that knows the
   * connection is dead before the pings say so (a stream that promised a
   * heartbeat went silent).
   */
  resetConnection(): void;
}

/**
 * The transport for one Docket service calling another: gRPC over cleartext
 * HTTP/2 (h2c, one multiplexed session), sending `authorization: Bearer
 * <token>` on every call (the `x-request-id` of the RPC being handled
 * comes with `forwardDeadline(ctx)`, so both hops log the same id; a
 * group-committed call, which carries many callers' items, has none of
 * its own); with tracing on each call is a CLIENT span of the
 * caller's trace and carries its `traceparent` (see `tracedCalls`). The
 * session is pinged as `INTERNAL_KEEPALIVE` says and takes
 * `INTERNAL_RECEIVE_WINDOWS`, and a unary call without a deadline gets
 * {@link DEFAULT_INTERNAL_DEADLINE_MS}. Pair each call with
 * `forwardDeadline(ctx)` to pass on the caller's deadline and cancellation.
 *
 * When the other service is a server of this process that answers in
 * memory (`answerInProcess`, the one-process deployment), every call goes
 * to its handlers without a socket (`inProcessTransportOf`), with the same
 * token and default deadline.
 *
 * Unary calls are written and read by hand on the session's streams
 * (`callUnaryStream`) unless tracing is on; streams, and unary calls while
 * tracing, go through Connect's gRPC transport.
 *
 * It offers no compression: the services talk inside one network, where
 * gzip only spends CPU on both sides (Connect's default would gzip every
 * answer over 1 KiB, such as each page of a journal a tail reads, on the
 * zlib thread pool of a machine whose cores serve the requests).
 */
export function createServiceTransport(options: ServiceTransportOptions): ServiceTransport {
  const { token } = options;
  const defaultDeadlineMs = options.defaultDeadlineMs ?? DEFAULT_INTERNAL_DEADLINE_MS;
  const inProcess = inProcessTransportOf(options.baseUrl, token);
  if (inProcess) {
    return {
      unary: (method, signal, timeoutMs, header, input, contextValues) => inProcess.unary(method, signal, timeoutMs ?? defaultDeadlineMs, header, input, contextValues),
      stream: inProcess.stream,
      // A server of this process: no connection to give up.
      resetConnection: () => {},
    };
  }
  const resetConnection = (): void => session.abort(new ConnectError('the connection was given up', Code.Unavailable));
  // A dead or half-open connection is noticed within the ping interval and timeout, also while a stream is quiet.
  const { transport, session } = createServiceConnection({
    baseUrl: options.baseUrl,
    token,
    tracerName: '@docket/service-kit',
    keepalive: INTERNAL_KEEPALIVE,
    receiveWindows: INTERNAL_RECEIVE_WINDOWS,
    acceptCompression: [],
    outerInterceptors: [unansweredSessionReset(resetConnection), defaultUnaryDeadline(defaultDeadlineMs)],
    innerInterceptors: [peerLossAsUnavailable],
  });
  let answeredAt = performance.now();
  const unary: Transport['unary'] = async (method, signal, timeoutMs, header, input, contextValues) => {
    // With tracing on, each call is a CLIENT span: Connect's path, with its interceptors.
    if (isTracingOn()) return transport.unary(method, signal, timeoutMs, header, input, contextValues);
    const fields = headerFields(header);
    fields['authorization'] = await bearerValue(token);
    try {
      const response = await callUnaryStream({ session, method, input, header: fields, timeoutMs: timeoutMs ?? defaultDeadlineMs, signal });
      answeredAt = performance.now();
      return response;
    } catch (error) {
      answeredAt = resetWhenUnanswered(error, signal, answeredAt, resetConnection);
      throw error;
    }
  };
  return {
    unary,
    stream: (...args) => transport.stream(...args),
    resetConnection,
  };
}

/** The deadline of an internal unary call whose caller set none. */
export const DEFAULT_INTERNAL_DEADLINE_MS = 10_000;

/**
 * How long unary calls may go without any answer from the other service
 * before a call that times out also drops the connection: the pings alone
 * do not always replace a half-open session (a session manager reuses a
 * dead session between calls when its ping timer is reset by calls that
 * come and go), and a fresh connection is cheap.
 */
export const UNANSWERED_SESSION_LIMIT_MS = INTERNAL_KEEPALIVE.pingIntervalMs + INTERNAL_KEEPALIVE.pingTimeoutMs;

/**
 * Drops the connection when a unary call times out or finds the peer
 * unavailable and no call has been answered for
 * {@link UNANSWERED_SESSION_LIMIT_MS}: a peer that answers anything (a
 * result, or an error it decided, with ErrorInfo) is alive.
 */
const unansweredSessionReset = (resetConnection: () => void): Interceptor => {
  let answeredAt = performance.now();
  return (next) => async (req) => {
    if (req.stream) return next(req);
    try {
      const response = await next(req);
      answeredAt = performance.now();
      return response;
    } catch (error) {
      answeredAt = resetWhenUnanswered(error, req.signal, answeredAt, resetConnection);
      throw error;
    }
  };
};

/**
 * The decision of {@link unansweredSessionReset} for one failed call:
 * resets the connection when it is due; returns when the peer last
 * answered (now, if this failure was an answer it decided, or after a
 * reset, so that one silent stretch resets once).
 */
function resetWhenUnanswered(error: unknown, signal: AbortSignal | undefined, answeredAt: number, resetConnection: () => void): number {
  if (error instanceof ConnectError && error.details.length > 0) return performance.now();
  if (
    error instanceof ConnectError &&
    (error.code === Code.DeadlineExceeded || error.code === Code.Unavailable) &&
    !(signal !== undefined && cancelledByCaller(signal)) &&
    performance.now() - answeredAt > UNANSWERED_SESSION_LIMIT_MS
  ) {
    resetConnection();
    return performance.now(); // the next call opens a new connection
  }
  return answeredAt;
}

function cancelledByCaller(signal: AbortSignal): boolean {
  if (!signal.aborted) return false;
  const reason: unknown = signal.reason;
  return !(reason instanceof ConnectError && reason.code === Code.DeadlineExceeded);
}

/**
 * Gives every unary call without a deadline `deadlineMs`:
 * a peer that accepted the call and then stopped (SIGSTOP, a partition)
 * answers DEADLINE_EXCEEDED instead of never. The next hop sees it as
 * `grpc-timeout`. Streams (WatchChanges, WatchJob) are long-lived by design
 * and are guarded by the session pings instead.
 */
const defaultUnaryDeadline = (deadlineMs: number): Interceptor => (next) => async (req) => {
  if (req.stream || req.header.has('grpc-timeout')) return next(req);
  const expired = new AbortController();
  const timer = setTimeout(() => expired.abort(new ConnectError('the deadline passed', Code.DeadlineExceeded)), deadlineMs);
  req.header.set('grpc-timeout', `${deadlineMs}m`);
  try {
    return await next({ ...req, signal: AbortSignal.any([req.signal, expired.signal]) });
  } catch (error) {
    if (expired.signal.aborted && !req.signal.aborted) throw new ConnectError('the deadline passed', Code.DeadlineExceeded);
    throw error;
  } finally {
    clearTimeout(timer);
  }
};

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

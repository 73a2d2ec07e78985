import { ConnectError, type HandlerContext, type Interceptor } from '@connectrpc/connect';
import { callAbortKey, isCallAborted, type CallAbortState } from './call-abort.js';
import { REQUEST_ID_HEADER, requestIdKey } from './request-id.js';

/**
 * Milliseconds left before the caller's deadline (`grpc-timeout` or
 * `connect-timeout-ms`), or undefined when the caller set none. Use it to
 * bound work such as Postgres `statement_timeout`.
 */
export function remainingTimeoutMs(ctx: HandlerContext): number | undefined {
  return ctx.timeoutMs();
}

/** Call options that carry a handler's deadline and cancellation to the next hop. */
export interface ForwardedDeadline {
  /** The caller's remaining deadline; absent when the caller set none. */
  readonly timeoutMs?: number;
  /**
   * Aborts when the caller cancels, the deadline passes, the handler
   * finishes, or the server's grace period ends. Made when first read.
   */
  readonly signal: AbortSignal;
  /**
   * Listens for the same abort without making `signal`, where the call can
   * (see {@link CallAbortState}): what a next hop that only needs to stop
   * waiting uses. Returns the function that stops listening.
   */
  readonly listenForAbort?: CallAbortState['listen'];
  /** The RPC's `x-request-id`, so the next hop logs the same id. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * Options to spread into a client call made while handling an RPC, so the
 * next hop honours what is left of the caller's deadline, stops when the
 * caller goes away and logs the caller's request id:
 *
 * ```ts
 * await state.getJob({ jobId }, forwardDeadline(ctx));
 * ```
 */
export function forwardDeadline(ctx: HandlerContext): ForwardedDeadline {
  const timeoutMs = ctx.timeoutMs();
  const requestId = ctx.values.get(requestIdKey);
  const abort = ctx.values.get(callAbortKey);
  return {
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    get signal() {
      return ctx.signal;
    },
    ...(abort ? { listenForAbort: abort.listen } : {}),
    ...(requestId === '' ? {} : { headers: { [REQUEST_ID_HEADER]: requestId } }),
  };
}

/**
 * Refuses an RPC whose deadline has already passed (`DEADLINE_EXCEEDED`) or
 * whose caller already cancelled (`CANCELLED`) before any handler work
 * starts. Connect aborts the handler signal at once for a zero or negative
 * remaining timeout, so an aborted signal is the test.
 */
export function deadlineInterceptor(): Interceptor {
  return (next) => async (req) => {
    if (isCallAborted(req)) throw ConnectError.from(req.signal.reason);
    return next(req);
  };
}

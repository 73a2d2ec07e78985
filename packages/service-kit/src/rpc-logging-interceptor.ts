import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { isCallAborted } from './call-abort.js';
import { clientLeft, clientLeftError, errorInfoOf, reasonForCode } from './error-mapping.js';
import type { LogLevel, Logger } from './logger.js';
import { requestIdFrom, requestIdKey } from './request-id.js';
import { hookStream, type StreamOutcome } from '@docket/contracts';

/** Codes that mean the server, not the caller, is at fault: logged at level `error`. */
const SERVER_FAULTS: ReadonlySet<number> = new Set([Code.Internal, Code.Unknown, Code.DataLoss]);

/** A successful unary call slower than this is logged at `info` (not a warning: a waiting ClaimJobs is slow by design). */
export const SLOW_CALL_MS = 1_000;

/** The path of an RPC as it appears on the wire and in logs: `/pkg.Service/Method`. */
export function rpcPath(req: { readonly service: { readonly typeName: string }; readonly method: { readonly name: string } }): string {
  return `/${req.service.typeName}/${req.method.name}`;
}

/**
 * Logs every RPC exactly once when it ends:
 * `{msg: "rpc", rpc, code, reason?, latency_ms, request_id}`; a streaming RPC
 * is logged when its stream completes, fails or is abandoned by the client
 * (`code: "canceled"`), also when its handler returns normally after the
 * caller cancelled or the deadline passed. The request id comes from `x-request-id` (or is
 * generated) and is stored under {@link requestIdKey}, where
 * `forwardDeadline` finds it for the calls to the next hop. Header values, tokens, bodies and error messages are never logged.
 *
 * The line's level ({@link rpcLogLevel}) keeps the default `info` stream to
 * what needs a look: a server fault is `error`, any other failure `info`, a
 * unary success slower than {@link SLOW_CALL_MS} `info` (a long-poll such
 * as a waiting ClaimJobs is slow on purpose, so it is no warning), and every other
 * success `debug`, which a service writes only at `DOCKET_LOG_LEVEL=debug`.
 * A line the logger would drop is never built.
 *
 * It must run outside the error-mapping interceptor so that it logs the code
 * and reason the client actually receives.
 */
export function rpcLoggingInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    const requestId = requestIdFrom(req.header);
    req.contextValues.set(requestIdKey, requestId);
    const started = performance.now();
    const finish = (outcome: StreamOutcome): void => {
      const latencyMs = performance.now() - started;
      // A handler that returns normally after its call was cancelled or timed
      // out (a Watch whose client left) did not answer anybody; a client
      // that left is CANCELLED, however its stream was reset.
      const effective: StreamOutcome =
        outcome.kind === 'completed' && isCallAborted(req)
          ? { kind: 'failed', error: clientLeft(req.signal) ? clientLeftError() : ConnectError.from(req.signal.reason, Code.Canceled) }
          : outcome;
      const { code, reason } = describeOutcome(effective);
      const level = rpcLogLevel(code, req.method.methodKind === 'unary' ? latencyMs : undefined);
      if (!logger.enabled(level)) return;
      logger[level]('rpc', {
        rpc: rpcPath(req),
        code: codeName(code),
        reason,
        latency_ms: Math.round(latencyMs * 1000) / 1000,
        request_id: requestId,
      });
    };
    let response;
    try {
      response = await next(req);
    } catch (error) {
      finish({ kind: 'failed', error });
      throw error;
    }
    if (!response.stream) {
      finish({ kind: 'completed' });
      return response;
    }
    return {
      ...response,
      message: hookStream(response.message, { onSettled: finish }),
    };
  };
}

/**
 * The level of an RPC's log line: `error` for a server fault (INTERNAL,
 * UNKNOWN, DATA_LOSS), `info` for any other failure and for a success
 * that took longer than {@link SLOW_CALL_MS}, `debug` for the rest.
 *
 * @param unaryLatencyMs how long a unary call took; undefined for a stream,
 *   whose duration is the subscription's, not slowness
 */
export function rpcLogLevel(code: number, unaryLatencyMs: number | undefined): LogLevel {
  if (SERVER_FAULTS.has(code)) return 'error';
  if (code !== 0) return 'info';
  return unaryLatencyMs !== undefined && unaryLatencyMs > SLOW_CALL_MS ? 'info' : 'debug';
}

function describeOutcome(outcome: StreamOutcome): { code: number; reason?: string } {
  switch (outcome.kind) {
    case 'completed':
      return { code: 0 };
    case 'abandoned':
      return { code: Code.Canceled, reason: reasonForCode(Code.Canceled) };
    case 'failed': {
      const error = ConnectError.from(outcome.error);
      return { code: error.code, reason: errorInfoOf(error)?.reason ?? reasonForCode(error.code) };
    }
  }
}

/** `ok` for success, otherwise the Connect spelling of the code (`deadline_exceeded`, `canceled`, ...). */
export function codeName(code: number): string {
  if (code === 0) return 'ok';
  const name = (Code as Record<number, string | undefined>)[code];
  if (name === undefined) return String(code);
  return name.replace(/^[A-Z]/, (c) => c.toLowerCase()).replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

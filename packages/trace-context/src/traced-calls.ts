import type { Interceptor } from '@connectrpc/connect';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { headerSetter } from './header-carrier.js';
import { rpcAttributes, rpcSpanName, traceCall } from './rpc-span.js';

/**
 * A client interceptor that puts each outgoing call into the caller's
 * trace: it starts a CLIENT span named after the RPC (a child of the
 * active span, if any), sends its W3C `traceparent` (and `tracestate`)
 * header, and ends the span when the answer, or the end of a response
 * stream, arrives. Without a registered OpenTelemetry SDK the API is a
 * no-op and so is this: no span, no header.
 *
 * @param tracerName the instrumentation scope, e.g. `@docket/client`
 */
export function tracedCalls(tracerName: string): Interceptor {
  const tracer = trace.getTracer(tracerName);
  return (next) => (req) => {
    const span = tracer.startSpan(rpcSpanName(req), { kind: SpanKind.CLIENT, attributes: rpcAttributes(req) });
    const callContext = trace.setSpan(context.active(), span);
    propagation.inject(callContext, req.header, headerSetter);
    return traceCall(span, callContext, () => next(req));
  };
}

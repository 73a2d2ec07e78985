import { context, isSpanContextValid, propagation, SpanKind, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ConsoleSpanExporter, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import type { Interceptor } from '@connectrpc/connect';
import { headerGetter, rpcAttributes, rpcSpanName, traceCall } from '@docket/trace-context';

/** What {@link startTracing} turned on; `shutdown` flushes spans still buffered. */
export interface Tracing {
  /** Where spans go: `otlp`, `console`, or `off`. */
  readonly exporter: 'otlp' | 'console' | 'off';
  shutdown(): Promise<void>;
}

/**
 * Which exporter the OpenTelemetry environment variables ask for. Tracing
 * is off unless configured: `OTEL_TRACES_EXPORTER=otlp` (or `console`), or
 * an `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
 * without an exporter named; `OTEL_SDK_DISABLED=true` and
 * `OTEL_TRACES_EXPORTER=none` turn it off.
 */
export function tracesExporterFrom(env: NodeJS.ProcessEnv): Tracing['exporter'] {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return 'off';
  const named = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (named === 'otlp' || named === 'console') return named;
  if (named !== undefined && named !== '') {
    if (named === 'none') return 'off';
    throw new Error(`OTEL_TRACES_EXPORTER must be otlp, console or none, not "${named}"`);
  }
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  return endpoint !== undefined && endpoint.trim() !== '' ? 'otlp' : 'off';
}

/** Whether {@link startTracing} registered a tracer provider in this process. */
let tracingOn = false;

/** Whether spans are recorded in this process (see {@link startTracing}): hot paths skip span work when not. */
export function isTracingOn(): boolean {
  return tracingOn;
}

/**
 * Registers the process's OpenTelemetry tracer provider when the
 * environment asks for one ({@link tracesExporterFrom}): W3C trace context
 * propagation, the async-hooks context manager, a batch span processor and
 * the OTLP/HTTP exporter, which reads its own `OTEL_EXPORTER_OTLP_*`
 * variables (endpoint, headers, timeout). Spans carry
 * `service.name = OTEL_SERVICE_NAME` or `docket-<service>`. When off,
 * nothing is registered and every span call in Docket is the API's no-op.
 */
export function startTracing(service: string, env: NodeJS.ProcessEnv = process.env): Tracing {
  const exporter = tracesExporterFrom(env);
  if (exporter === 'off') return { exporter, shutdown: async () => {} };
  const spanExporter: SpanExporter = exporter === 'otlp' ? new OTLPTraceExporter() : new ConsoleSpanExporter();
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME?.trim() || `docket-${service}` }),
    spanProcessors: [new BatchSpanProcessor(spanExporter)],
  });
  provider.register();
  tracingOn = true;
  return { exporter, shutdown: () => provider.shutdown() };
}

/**
 * The server side of trace propagation: continues the trace named by the
 * call's `traceparent` header (or starts one) with a SERVER span named
 * after the RPC, and runs the handler, and each pull of a response stream,
 * inside it, so the calls it makes to other services and to Postgres are
 * its children. It runs outermost, so log lines of the call carry its
 * trace id. A no-op when tracing is off.
 */
export function tracingInterceptor(): Interceptor {
  const tracer = trace.getTracer('@docket/service-kit');
  return (next) => (req) => {
    const parent = propagation.extract(context.active(), req.header, headerGetter);
    const span = tracer.startSpan(rpcSpanName(req), { kind: SpanKind.SERVER, attributes: rpcAttributes(req) }, parent);
    // Tracing off and no trace to continue: nothing to record or propagate,
    // so a stream's pulls are not wrapped (they are the hot path of a stream).
    if (!span.isRecording() && !isSpanContextValid(span.spanContext())) return next(req);
    return traceCall(span, trace.setSpan(parent, span), () => next(req));
  };
}

import { ProxyTracerProvider, trace } from '@opentelemetry/api';

/**
 * Whether an OpenTelemetry SDK registered a tracer provider in this
 * process: without one the API is a no-op, so a call's span and
 * `traceparent` would be nothing, and a caller may skip the work of
 * making them.
 */
export function isTracingRegistered(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer('@docket/trace-context') !== undefined;
}

import { describe, expect, it } from 'vitest';
import { tracesExporterFrom } from './tracing.js';

describe('tracesExporterFrom', () => {
  it.each([
    [{}, 'off'],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, 'otlp'],
    [{ OTEL_TRACES_EXPORTER: ' Console ' }, 'console'],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'off'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'otlp'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, 'otlp'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, 'off'],
    [{ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }, 'off'],
  ] as const)('%o turns tracing %s', (env, expected) => {
    expect(tracesExporterFrom(env)).toBe(expected);
  });

  it('refuses an exporter it does not have rather than silently tracing nothing', () => {
    expect(() => tracesExporterFrom({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow('OTEL_TRACES_EXPORTER must be otlp, console or none, not "zipkin"');
  });
});

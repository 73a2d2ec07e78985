import { isSpanContextValid, trace } from '@opentelemetry/api';

/** Severity of a {@link Logger} line, least severe first. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Every {@link LogLevel}, least severe first. */
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** The level a service logs at unless `DOCKET_LOG_LEVEL` says otherwise. */
export const DEFAULT_LOG_LEVEL: LogLevel = 'info';

/**
 * Extra structured fields of a log line. Values are serialized with
 * `JSON.stringify` (bigints as decimal strings). Never put header values,
 * tokens, request bodies or the message of an unexpected error here.
 */
export type LogFields = Readonly<Record<string, unknown>>;

/**
 * A structured logger writing one JSON object per line:
 * `{time, level, service, msg, trace_id?, span_id?, ...fields}`, the trace
 * ids being those of the active OpenTelemetry span (when tracing is on and
 * the line is written inside a traced call). Lines below its level are
 * dropped; code that would do work to build a line asks {@link enabled}
 * first.
 */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** Whether a line of `level` would be written. */
  enabled(level: LogLevel): boolean;
}

/** Keys every line carries; a field with one of these names is dropped, not allowed to forge them. */
const RESERVED_KEYS: ReadonlySet<string> = new Set(['time', 'level', 'service', 'msg', 'trace_id', 'span_id']);

/**
 * Creates the logger of one service. Each line at or above `level` is
 * written as exactly one line of JSON to `sink` (stdout by default), so log
 * shippers and test harnesses can parse the stream line by line; the
 * startup line `{msg: "listening", url}` is what harnesses read to learn a
 * port chosen by the OS. A line below `level` costs a comparison.
 *
 * @param service the service name written into every line (`state`, `admission`, ...)
 * @param sink receives each line without a trailing newline
 * @param level the least severe level written (default {@link DEFAULT_LOG_LEVEL})
 */
export function createLogger(service: string, sink?: (line: string) => void, level: LogLevel = DEFAULT_LOG_LEVEL): Logger {
  const write = sink ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const threshold = LOG_LEVELS.indexOf(level);
  const enabled = (candidate: LogLevel): boolean => LOG_LEVELS.indexOf(candidate) >= threshold;
  const log = (lineLevel: LogLevel, msg: string, fields?: LogFields): void => {
    if (!enabled(lineLevel)) return;
    const entry: Record<string, unknown> = { time: new Date().toISOString(), level: lineLevel, service, msg };
    const span = trace.getActiveSpan()?.spanContext();
    if (span !== undefined && isSpanContextValid(span)) {
      entry.trace_id = span.traceId;
      entry.span_id = span.spanId;
    }
    if (fields) {
      for (const [key, value] of Object.entries(fields)) {
        if (!RESERVED_KEYS.has(key) && value !== undefined) entry[key] = value;
      }
    }
    write(JSON.stringify(entry, jsonSafe));
  };
  return {
    debug: (msg, fields) => log('debug', msg, fields),
    info: (msg, fields) => log('info', msg, fields),
    warn: (msg, fields) => log('warn', msg, fields),
    error: (msg, fields) => log('error', msg, fields),
    enabled,
  };
}

/** Whether `value` names a {@link LogLevel}. */
export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value);
}

function jsonSafe(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

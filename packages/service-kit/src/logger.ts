/** Severity of a {@link Logger} line. */
export type LogLevel = 'info' | 'warn' | 'error';

/**
 * Extra structured fields of a log line. Values are serialized with
 * `JSON.stringify` (bigints as decimal strings). Never put header values,
 * tokens, request bodies or the message of an unexpected error here.
 */
export type LogFields = Readonly<Record<string, unknown>>;

/**
 * A structured logger writing one JSON object per line:
 * `{time, level, service, msg, ...fields}`.
 */
export interface Logger {
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

/** Keys every line carries; a field with one of these names is dropped, not allowed to forge them. */
const RESERVED_KEYS: ReadonlySet<string> = new Set(['time', 'level', 'service', 'msg']);

/**
 * Creates the logger of one service. Each call writes exactly one line of
 * JSON to `sink` (stdout by default), so log shippers and test harnesses can
 * parse the stream line by line; the startup line `{msg: "listening", url}`
 * is what harnesses read to learn a port chosen by the OS.
 *
 * @param service the service name written into every line (`state`, `admission`, ...)
 * @param sink receives each line without a trailing newline
 */
export function createLogger(service: string, sink?: (line: string) => void): Logger {
  const write = sink ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const log = (level: LogLevel, msg: string, fields?: LogFields): void => {
    const entry: Record<string, unknown> = { time: new Date().toISOString(), level, service, msg };
    if (fields) {
      for (const [key, value] of Object.entries(fields)) {
        if (!RESERVED_KEYS.has(key) && value !== undefined) entry[key] = value;
      }
    }
    write(JSON.stringify(entry, jsonSafe));
  };
  return {
    info: (msg, fields) => log('info', msg, fields),
    warn: (msg, fields) => log('warn', msg, fields),
    error: (msg, fields) => log('error', msg, fields),
  };
}

function jsonSafe(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

/**
 * Where the SDK tells what it does: one `info` line per job transition
 * (claimed, succeeded, failed, cancelled, paused, lost) and per worker
 * transition (registered, draining, stopped), `warn` for retried or refused
 * calls, `error` for what stops the worker. `fields` are structured
 * (`event`, `jobId`, `attemptId`, `fence`, `code`, `reason`, ...) and never
 * hold tokens, inputs, results or the text of a handler's error; a handler's
 * thrown error is passed as `fields.error` only to this logger, which runs in
 * the worker's own process.
 */
export interface WorkerLogger {
  debug?(message: string, fields?: Readonly<Record<string, unknown>>): void;
  info(message: string, fields?: Readonly<Record<string, unknown>>): void;
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
  error(message: string, fields?: Readonly<Record<string, unknown>>): void;
}

/** The default logger: says nothing. */
export const silentLogger: WorkerLogger = Object.freeze({
  info() {},
  warn() {},
  error() {},
});

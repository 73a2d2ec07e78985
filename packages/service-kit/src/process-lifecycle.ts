import { readLogLevel } from './environment.js';
import { createLogger, type LogLevel, type Logger } from './logger.js';
import type { RunningServer } from './server.js';
import { startTracing, type Tracing } from './tracing.js';

/** What {@link runUntilSignalled} listens to and exits through; tests substitute both. */
export interface ProcessHooks {
  /** Emits `SIGTERM` and `SIGINT`; `process` by default. */
  readonly signals?: Pick<NodeJS.EventEmitter, 'on' | 'off'>;
  /** Ends the process; `process.exit` by default. */
  readonly exit?: (code: number) => void;
}

const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/**
 * The tail of every `main.ts`: on SIGTERM or SIGINT, shut the server down
 * gracefully within `graceMs`, then run `onStopped` (close the database
 * pool, stop background loops), log `{msg: "stopped"}` and exit 0. A second
 * signal while stopping exits 1 at once; a failure while stopping is logged
 * (name only) and exits 1.
 */
export function runUntilSignalled(
  server: Pick<RunningServer, 'shutdown'>,
  logger: Logger,
  graceMs: number,
  onStopped?: () => Promise<void>,
  hooks: ProcessHooks = {},
): void {
  const signals = hooks.signals ?? process;
  const exit = hooks.exit ?? ((code: number) => process.exit(code));
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn('second signal, exiting now', { signal });
      exit(1);
      return;
    }
    stopping = true;
    logger.info('stopping', { signal, grace_ms: graceMs });
    void (async () => {
      try {
        await server.shutdown(graceMs);
        await onStopped?.();
        logger.info('stopped');
        exit(0);
      } catch (error) {
        logger.error('stop failed', { error_name: error instanceof Error ? error.name : typeof error });
        exit(1);
      }
    })();
  };
  for (const signal of STOP_SIGNALS) signals.on(signal, onSignal);
}

/** What a service's start function hands to {@link runService}. */
export interface StartedService {
  readonly server: RunningServer;
  readonly graceMs: number;
  /** Runs after the server has drained: close pools, stop loops. */
  readonly onStopped?: () => Promise<void>;
}

/**
 * The whole of a service's `main.ts`: create its logger (at
 * `DOCKET_LOG_LEVEL`), turn tracing on if the OpenTelemetry variables ask
 * for it ({@link startTracing}), start it, then drain on SIGTERM/SIGINT
 * ({@link runUntilSignalled}) and flush the spans still buffered. A start that fails, a bad log level
 * included, logs the error's name and its message (start-up errors are
 * written by Docket code: configuration problems and refusals, never SQL or
 * secrets) and exits 1.
 */
export function runService(name: string, start: (logger: Logger) => Promise<StartedService>): void {
  let level: LogLevel;
  let tracing: Tracing;
  try {
    level = readLogLevel(process.env);
    tracing = startTracing(name, process.env);
  } catch (error) {
    failedToStart(createLogger(name), error);
    return;
  }
  const logger = createLogger(name, undefined, level);
  start(logger).then(
    ({ server, graceMs, onStopped }) =>
      runUntilSignalled(server, logger, graceMs, async () => {
        await onStopped?.();
        await tracing.shutdown();
      }),
    (error: unknown) => failedToStart(logger, error),
  );
}

function failedToStart(logger: Logger, error: unknown): void {
  const failure = error instanceof Error ? { error: error.name, reason: error.message } : { error: typeof error };
  logger.error('failed to start', failure);
  process.exit(1);
}

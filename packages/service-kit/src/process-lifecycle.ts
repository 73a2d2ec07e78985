import type { Logger } from './logger.js';
import type { RunningServer } from './server.js';

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
  server: RunningServer,
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

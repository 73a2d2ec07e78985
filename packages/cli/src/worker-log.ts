import type { WorkerLogger } from '@docket/worker-sdk';
import type { CliContext } from './command.js';

/**
 * The worker SDK's log as `docket worker` prints it: one line per event,
 * prefixed with the local time (HH:MM:SS.mmm); job and worker transitions to
 * standard output, warnings and errors to standard error. Structured fields
 * are left out: the messages already name the job, and the fields may hold
 * a handler's error, which stays in this process.
 */
export function workerLog(context: CliContext): WorkerLogger {
  const stamp = (): string => {
    const now = new Date();
    return `${now.toTimeString().slice(0, 8)}.${String(now.getMilliseconds()).padStart(3, '0')}`;
  };
  return {
    info: (message) => context.out(`${stamp()} ${message}\n`),
    warn: (message) => context.err(`${stamp()} warning: ${message}\n`),
    error: (message) => context.err(`${stamp()} error: ${message}\n`),
  };
}

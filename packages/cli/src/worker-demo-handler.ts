import { abortKindOf, permanentFailure, type JobContext, type JobHandler, type JobResult } from '@docket/worker-sdk';

/** Options of {@link demoHandler}. */
export interface DemoHandlerOptions {
  /** Prints one line (without its newline). */
  readonly say: (line: string) => void;
  /** Save a checkpoint every this many steps; default 5. */
  readonly checkpointEvery?: number;
}

/** Most steps a demo job may count to. */
export const DEMO_COUNT_MAX = 1_000_000;

/** Longest pause between steps, in ms. */
export const DEMO_DELAY_MAX_MS = 60_000;

/**
 * The `docket worker` demo: counts from where the last checkpoint left off
 * (`checkpoint.at`, else 0) to `input.count` (default 10), one step every
 * `input.delay_ms` (default 200), reporting progress after each step and
 * saving a checkpoint every few steps. On a pause request it saves a
 * checkpoint at the current step and returns (the SDK reports paused, and
 * the next attempt resumes there); on a cancel it stops (the SDK reports
 * cancelled); at worker shutdown it saves a checkpoint and gives the
 * attempt up, so the retry resumes. A bad input fails the job at once
 * (INVALID_INPUT). The result is `{counted, resumed_from}`.
 */
export function demoHandler(options: DemoHandlerOptions): JobHandler {
  const every = options.checkpointEvery ?? 5;
  return async (job) => {
    const { count, delayMs } = demoInput(job.input);
    const from = resumePoint(job, count);
    if (from > 0) options.say(`${job.jobId} resuming at ${from}/${count} (attempt ${job.attemptNumber}, fence ${job.fence})`);
    await job.emit('worker.demo_started', { from, count });
    let at = from;
    while (at < count && !job.signal.aborted) {
      await sleep(delayMs, job.signal);
      if (job.signal.aborted) break;
      at += 1;
      await job.progress(at, count, `counted to ${at} of ${count}`);
      if (at % every === 0 && at < count) await job.saveCheckpoint({ at });
    }
    switch (abortKindOf(job.signal)) {
      case 'pause':
        await job.saveCheckpoint({ at });
        options.say(`${job.jobId} pause requested: checkpoint saved at ${at}/${count}`);
        return undefined;
      case 'cancel':
        options.say(`${job.jobId} cancel requested: stopped at ${at}/${count}`);
        return undefined;
      case 'shutdown':
        await job.saveCheckpoint({ at }).catch(() => undefined);
        options.say(`${job.jobId} worker shutting down: checkpoint saved at ${at}/${count}, leaving the job to be retried`);
        throw job.signal.reason;
      case 'lost':
        options.say(`${job.jobId} lost its lease at ${at}/${count}: stopped`);
        return undefined;
      case undefined:
        return { counted: count, resumed_from: from } satisfies JobResult;
    }
  };
}

function demoInput(input: JobContext['input']): { count: number; delayMs: number } {
  const count = input['count'] ?? 10;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > DEMO_COUNT_MAX) {
    throw permanentFailure('INVALID_INPUT', `count must be a whole number from 1 to ${DEMO_COUNT_MAX}`, { field: 'count' });
  }
  const delayMs = input['delay_ms'] ?? 200;
  if (typeof delayMs !== 'number' || !Number.isInteger(delayMs) || delayMs < 0 || delayMs > DEMO_DELAY_MAX_MS) {
    throw permanentFailure('INVALID_INPUT', `delay_ms must be a whole number from 0 to ${DEMO_DELAY_MAX_MS}`, { field: 'delay_ms' });
  }
  return { count, delayMs };
}

function resumePoint(job: JobContext, count: number): number {
  const at = job.checkpoint?.['at'];
  if (at === undefined) return 0;
  if (typeof at !== 'number' || !Number.isInteger(at) || at < 0 || at > count) {
    throw permanentFailure('INPUT_CHANGED', 'the checkpoint does not fit the input', { field: 'checkpoint.at' });
  }
  return at;
}

/** Resolves after `ms` or as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

import { abortKindOf, permanentFailure, type EffectSteps, type JobContext, type JobHandler, type JobResult, type JobSignal } from '@docket/worker-sdk';

/** Options of {@link demoHandler}. */
export interface DemoHandlerOptions {
  /** Prints one line (without its newline). */
  readonly say: (line: string) => void;
  /** Save a checkpoint every this many steps; default 5. */
  readonly checkpointEvery?: number;
  /** The external system `input.effect` records the count in; default one {@link DemoLedger} per handler. */
  readonly ledger?: DemoLedger;
}

/** Most steps a demo job may count to. */
export const DEMO_COUNT_MAX = 1_000_000;

/** Longest pause between steps, in ms. */
export const DEMO_DELAY_MAX_MS = 60_000;

/** The effect kind the demo records its count under. */
export const DEMO_EFFECT_KIND = 'demo.record';

/**
 * A stand-in for an external system, in this process: it accepts a record
 * under an idempotency key (the same key always gets the same id, as a real
 * payment or e-mail API would deduplicate) and confirms it. Enough to show
 * the effect journal at work; a real one lives elsewhere and survives the
 * worker.
 */
export class DemoLedger {
  private readonly byKey = new Map<string, string>();
  private readonly confirmedIds = new Set<string>();

  /** Accepts a record under `key` unless it already holds one; the record's id. */
  submit(key: string): string {
    let id = this.byKey.get(key);
    if (id === undefined) {
      id = `ledger-${String(this.byKey.size + 1).padStart(6, '0')}`;
      this.byKey.set(key, id);
    }
    return id;
  }

  /** Confirms the record `id` (idempotent). */
  confirm(id: string): void {
    this.confirmedIds.add(id);
  }

  /** Whether `id` was confirmed. */
  confirmed(id: string): boolean {
    return this.confirmedIds.has(id);
  }

  /** The effect steps that record in this ledger. */
  steps(): EffectSteps {
    return {
      sign: ({ key }) => this.submit(key),
      commit: ({ externalId }) => this.confirm(externalId),
    };
  }
}

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
 *
 * - `input.approve_at` (a step from 0 to count): on reaching it, the job
 *   saves the checkpoint `{at}` and asks its owner for approval (`docket
 *   approve` / `docket deny`) with details `{at: approve_at, count}`,
 *   ending the attempt. After ALLOW the next attempt sees that approval in
 *   `job.lastApproval`, continues from `at` and does not ask again; a
 *   retry of an attempt lost before its request was durable sees no such
 *   approval and asks again. After DENY the job has failed.
 * - Signals (`docket signal`): each one is printed as `<job> signal <seq>
 *   <name>`; `add` with payload `{"n": <whole number>}` advances the count
 *   by n more steps at the next step (never past count). Others are only
 *   printed.
 * - `input.effect` true: once counted, the job records the count exactly
 *   once through the effect journal (kind {@link DEMO_EFFECT_KIND}, key
 *   `demo-record-<job id>`) in the in-process {@link DemoLedger}, and the
 *   result gains `external_id`. A retry after the record committed replays
 *   it instead of recording again.
 */
export function demoHandler(options: DemoHandlerOptions): JobHandler {
  const every = options.checkpointEvery ?? 5;
  const ledger = options.ledger ?? new DemoLedger();
  return async (job) => {
    const { count, delayMs, approveAt, effect } = demoInput(job.input);
    const from = resumePoint(job, count);
    // Granted when the owner allowed this job's approval for exactly this step (never judged from the checkpoint).
    const approved = approveAt !== undefined && job.lastApproval?.decision === 'ALLOW' && job.lastApproval.details['at'] === approveAt;
    const extra = consumeSignals(job, options.say);
    if (from > 0) options.say(`${job.jobId} resuming at ${from}/${count} (attempt ${job.attemptNumber}, fence ${job.fence})`);
    if (approved && from === approveAt) options.say(`${job.jobId} approved: continuing from ${from}/${count}`);
    await job.emit('worker.demo_started', { from, count });
    let at = from;
    for (;;) {
      if (approveAt !== undefined && !approved && at >= approveAt && !job.signal.aborted) {
        await job.saveCheckpoint({ at });
        const { approvalId } = await job.requestApproval(`Let job ${job.jobId} continue past step ${at} of ${count}?`, { at: approveAt, count });
        options.say(`${job.jobId} waiting for approval ${approvalId}`);
        return undefined; // the attempt has ended; after ALLOW the next one continues from the checkpoint
      }
      if (at >= count || job.signal.aborted) break;
      await sleep(delayMs, job.signal);
      if (job.signal.aborted) break;
      at = Math.min(count, at + 1 + extra.take());
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
      case 'approval': // only after requestApproval, which returned above
        return undefined;
      case undefined:
        break;
    }
    const result = { counted: count, resumed_from: from } satisfies JobResult;
    if (!effect) return result;
    const recorded = await job.effect(DEMO_EFFECT_KIND, `demo-record-${job.jobId}`, { counted: count }, ledger.steps());
    options.say(`${job.jobId} recorded its count${recorded.replayed ? ' (replayed: it was recorded before)' : ''}`);
    return { ...result, external_id: recorded.externalId } satisfies JobResult;
  };
}

/**
 * Takes the job's signals alongside the counting, printing each, and sums
 * the `n` of `add` signals for the counting loop to {@link take}. Not
 * awaited: the iteration ends when the attempt does.
 */
function consumeSignals(job: JobContext, say: (line: string) => void): { take(): number } {
  let added = 0;
  void (async () => {
    for await (const signal of job.signals) {
      say(`${job.jobId} signal ${signal.sequence} ${signal.name}${signal.redelivered ? ' (redelivered: an earlier attempt may have applied it)' : ''}`);
      added += addedSteps(signal);
    }
  })();
  return {
    take() {
      const steps = added;
      added = 0;
      return steps;
    },
  };
}

/** The steps an `add` signal adds: its payload's `n`, a whole number from 1 to {@link DEMO_COUNT_MAX}; 0 for anything else. */
function addedSteps(signal: JobSignal): number {
  const n = signal.payload['n'];
  return signal.name === 'add' && typeof n === 'number' && Number.isInteger(n) && n > 0 && n <= DEMO_COUNT_MAX ? n : 0;
}

function demoInput(input: JobContext['input']): { count: number; delayMs: number; approveAt: number | undefined; effect: boolean } {
  const count = input['count'] ?? 10;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > DEMO_COUNT_MAX) {
    throw permanentFailure('INVALID_INPUT', `count must be a whole number from 1 to ${DEMO_COUNT_MAX}`, { field: 'count' });
  }
  const delayMs = input['delay_ms'] ?? 200;
  if (typeof delayMs !== 'number' || !Number.isInteger(delayMs) || delayMs < 0 || delayMs > DEMO_DELAY_MAX_MS) {
    throw permanentFailure('INVALID_INPUT', `delay_ms must be a whole number from 0 to ${DEMO_DELAY_MAX_MS}`, { field: 'delay_ms' });
  }
  const approveAt = input['approve_at'] ?? undefined;
  if (approveAt !== undefined && (typeof approveAt !== 'number' || !Number.isInteger(approveAt) || approveAt < 0 || approveAt > count)) {
    throw permanentFailure('INVALID_INPUT', 'approve_at must be a whole number from 0 to count', { field: 'approve_at' });
  }
  const effect = input['effect'] ?? false;
  if (typeof effect !== 'boolean') throw permanentFailure('INVALID_INPUT', 'effect must be true or false', { field: 'effect' });
  return { count, delayMs, approveAt, effect };
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

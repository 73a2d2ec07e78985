import type { JsonObject } from '@bufbuild/protobuf';
import type { EffectRecord } from './effect-record.js';
import type { EffectResult, EffectSteps } from './effect-runner.js';
import type { JobSignal } from './signal-inbox.js';

/**
 * What a handler returns on success: a JSON object (or nothing, for `{}`),
 * stored as the job's result (at most 1 MiB of canonical JSON).
 */
export type JobResult = { readonly [key: string]: unknown };

/**
 * What `job.requestApproval` resolves with once the request is durable. An
 * object (a {@link JobResult}), so a handler can end with
 * `return job.requestApproval(...)`; the SDK ignores it as a result.
 */
export type ApprovalRequested = {
  /** The approval's id (`apr_...`), which the owner's DecideApproval names. */
  readonly approvalId: string;
};

/**
 * The job's latest approval its owner decided, as the claim delivered it:
 * after `requestApproval` and an ALLOW, every later attempt sees which
 * approval was granted, and for what (`prompt`, `details`).
 */
export type LastApproval = {
  readonly approvalId: string;
  readonly decision: 'ALLOW' | 'DENY';
  readonly prompt: string;
  readonly details: JsonObject;
  readonly decidedAt: Date | undefined;
};

/**
 * Runs one attempt of one job. Resolve (with a {@link JobResult} or
 * nothing) when the work is done; throw a `JobFailure` for a failure the
 * owner should see with its class; anything else thrown is reported as a
 * retryable INTERNAL failure with a fixed message.
 *
 * Watch `job.signal`: when it aborts, stop (see `JobAbortedError.kind`).
 * Whatever the handler does after a `cancel`, the SDK reports the job
 * cancelled; after a `pause`, paused (unless it throws a `JobFailure`).
 * Once `job.requestApproval` has resolved, nothing the handler returns or
 * throws is reported: the attempt has ended.
 */
export type JobHandler = (job: JobContext) => Promise<JobResult | void> | JobResult | void;

/**
 * One claimed attempt as its handler sees it: the job's identity and input,
 * where an earlier attempt left off, a signal that says when to stop, and
 * helpers that report on the attempt under its authority.
 *
 * Every helper sends a fresh `operation_id`, retries a try that may have
 * been applied (UNAVAILABLE, DEADLINE_EXCEEDED, ...) with the same id, and
 * rejects with a `DocketWorkerError` when the call was refused; a refusal
 * for STALE_AUTHORITY (or STALE_INCARNATION) also aborts `signal` with kind
 * `lost`. Helpers reject with reason ATTEMPT_ENDED once the handler has
 * settled or the authority is gone.
 */
export interface JobContext {
  /** The job's id (`job_...`). */
  readonly jobId: string;
  /** This attempt's id (`att_...`). */
  readonly attemptId: string;
  /** This attempt's fencing token: greater than every earlier attempt's of this job. */
  readonly fence: bigint;
  /** 1 for the job's first attempt, then one more per attempt (retries, resumes). */
  readonly attemptNumber: number;
  /** The queue the job was claimed from. */
  readonly queue: string;
  /** The job's input as submitted. */
  readonly input: JsonObject;
  /**
   * The latest checkpoint: the one this attempt started from (saved by an
   * earlier attempt; `undefined` if none), then the last one this attempt
   * saved with {@link saveCheckpoint}.
   */
  readonly checkpoint: JsonObject | undefined;
  /**
   * Aborts when the handler should stop: its `reason` is a
   * `JobAbortedError` whose `kind` is `cancel`, `pause`, `lost` or
   * `shutdown`. Pass it to anything that accepts an AbortSignal.
   */
  readonly signal: AbortSignal;
  /**
   * Stores the attempt's progress on the job (latest only, not journaled)
   * and pushes it to live subscribers. Learns of cancel and pause requests
   * like a renewal does. `completed` and `total` are non-negative integers;
   * `total` 0 or omitted means unknown; `message` at most 1024 characters.
   */
  progress(completed: number, total?: number, message?: string): Promise<void>;
  /**
   * Replaces the job's checkpoint with `value` (a JSON object, at most
   * 1 MiB) and journals `checkpoint.saved`. Durable when it resolves: the
   * next attempt (after a retry, a pause or a lost lease) starts from it.
   */
  saveCheckpoint(value: JobResult): Promise<void>;
  /**
   * Appends a worker event (`type` under `worker.`, payload a JSON object
   * of at most 64 KiB) to the job's hash-chained journal; resolves with its
   * sequence number.
   */
  emit(type: `worker.${string}`, payload?: JobResult): Promise<bigint>;
  /**
   * Asks the job's owner to decide before the work goes on, and ends this
   * attempt. Resolves with `{ approvalId }` (`apr_...`) once the request is
   * durable: the job is then PAUSED waiting for the owner's
   * DecideApproval, this attempt holds no lease any more, `signal` aborts
   * with kind `approval`, `signals` ends, every other helper rejects
   * (ATTEMPT_ENDED), and whatever the handler returns or throws afterwards
   * is ignored (no outcome is reported). So return at once:
   *
   * ```ts
   * const granted = job.lastApproval?.decision === 'ALLOW' && job.lastApproval.details['step'] === 'ship';
   * if (!granted) {
   *   await job.saveCheckpoint(progressSoFar);
   *   return job.requestApproval('Ship it?', { step: 'ship', amount: 5 });
   * }
   * ```
   *
   * Save a checkpoint first. The owner's ALLOW re-queues the job: a later
   * claim runs the handler again in a new attempt (`attemptNumber` grows,
   * `fence` too) from that checkpoint, and {@link lastApproval} names the
   * approval that was granted, which is how a handler knows it may go on.
   * Decide that from `lastApproval`, never from a mark saved before asking:
   * a worker lost before its request was durable leaves no decision, so
   * its retry asks again. A DENY fails the job (class APPROVAL_DENIED) and
   * no attempt follows.
   *
   * Signals the handler took are acknowledged before the request. The
   * request is refused (a `DocketWorkerError`, FAILED_PRECONDITION
   * ILLEGAL_TRANSITION) while the job is CANCELLING; the attempt goes on
   * then. `prompt`: 1 to 4096 characters, shown to humans (no secrets);
   * `details`: a JSON object of at most 64 KiB, non-secret.
   */
  requestApproval(prompt: string, details?: JobResult): Promise<ApprovalRequested>;
  /** The job's latest decided approval (see {@link requestApproval}); `undefined` if none was ever decided. */
  readonly lastApproval: LastApproval | undefined;
  /**
   * The results of the job's SUCCEEDED parents, by parent job id
   * (docs/dependencies.md): empty for a job without parents, and without
   * a parent that failed under `on_parent_failure` RUN. At most 1 MiB in
   * all; {@link parentResultsTruncated} says when some were left out.
   */
  readonly parentResults: Readonly<Record<string, JobResult>>;
  /** True when some parent results were left out for the 1 MiB cap (read them with GetJob). */
  readonly parentResultsTruncated: boolean;
  /**
   * The signals the job's owner sends (SendSignal), each yielded once, in
   * sequence order, for `for await (const s of job.signals)`. They arrive
   * with the claim and with every lease renewal; while the handler waits
   * on the iterator, the SDK renews every `signalPollMs` (default 1 s) so a
   * new signal arrives within about that. Signals that arrive while the
   * handler is not iterating are kept until it does.
   *
   * A signal is acknowledged (AckSignals) once the handler has taken it:
   * when it asks for the next one, ends the loop, settles, or requests
   * approval. The iteration ends when the attempt does: `signal` aborted or
   * the handler settled (so a consuming loop must not be awaited by the
   * handler before it returns; run it alongside the work). A signal taken
   * but whose acknowledgement had not landed when the attempt was lost
   * becomes UNKNOWN: the job accepts no new signal until the owner
   * reconciles, and after ReconcileSignals REDELIVER it comes back to a
   * later attempt with `redelivered: true` (the earlier attempt may have
   * acted on it). Iterate from one place only.
   */
  readonly signals: AsyncIterable<JobSignal>;
  /**
   * Performs an external side effect exactly once per `key` across every
   * attempt of the job, through the job's effect journal: BeginEffect
   * binds `key` (16 to 128 characters of `[A-Za-z0-9._~-]`, the same in
   * every attempt) to `kind` and the digest of `input`; then `sign` submits
   * the request and returns the external id, and `commit` confirms it, each
   * recorded (SIGNED, COMMITTED). A later call with the same key (in this
   * attempt or a replacement after a lost one) continues from the recorded
   * state instead of repeating: already COMMITTED, it resolves with the
   * stored external id (`replayed: true`) and runs no step; SIGNED, it runs
   * only `commit`. A step that throws leaves the effect RECOVERABLE and
   * rethrows; a cancel seen before a step records the cancellation and
   * rejects with the signal's reason, and a step that fails after a cancel
   * records the cancellation too (see {@link EffectSteps}). `sign` and
   * `commit` may still run twice for one key (a crash after the external
   * call and before it is recorded), so the external system must
   * deduplicate by `key`. The same key with another kind or input is
   * refused (ALREADY_EXISTS, IDEMPOTENCY_CONFLICT). The SDK never logs keys
   * or external ids.
   */
  effect(kind: string, key: string, input: JobResult, steps: EffectSteps): Promise<EffectResult>;
  /**
   * The job's unfinished effects (every one not COMMITTED: PREPARED or
   * SIGNED ones a lost attempt left in flight, and RECOVERABLE ones),
   * oldest first, at most `limit` (1 to 256, default 256): what a
   * replacement attempt has to finish, by calling `effect` with the same
   * key, or resolve otherwise.
   */
  recoverableEffects(limit?: number): Promise<readonly EffectRecord[]>;
}

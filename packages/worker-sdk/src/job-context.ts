import type { JsonObject } from '@bufbuild/protobuf';

/**
 * What a handler returns on success: a JSON object (or nothing, for `{}`),
 * stored as the job's result (at most 1 MiB of canonical JSON).
 */
export type JobResult = { readonly [key: string]: unknown };

/**
 * Runs one attempt of one job. Resolve (with a {@link JobResult} or
 * nothing) when the work is done; throw a `JobFailure` for a failure the
 * owner should see with its class; anything else thrown is reported as a
 * retryable INTERNAL failure with a fixed message.
 *
 * Watch `job.signal`: when it aborts, stop (see `JobAbortedError.kind`).
 * Whatever the handler does after a `cancel`, the SDK reports the job
 * cancelled; after a `pause`, paused (unless it throws a `JobFailure`).
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
}

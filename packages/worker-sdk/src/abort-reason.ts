/**
 * Why a job's `signal` was aborted:
 * - `cancel`: the owner cancelled the job (it is CANCELLING). Stop; the SDK
 *   reports a cancelled outcome when the handler ends.
 * - `pause`: the owner asked to pause. Save a checkpoint, then return; the
 *   SDK reports a paused outcome and the next attempt resumes from it.
 * - `lost`: this worker no longer holds the attempt (its lease expired, the
 *   service answered STALE_AUTHORITY, or the incarnation was superseded).
 *   Stop at once; nothing more is reported, another attempt may run the job.
 * - `shutdown`: the worker is stopping (drain grace period over, or
 *   `stop()`). Return a result if the work is done; otherwise stop, and the
 *   attempt is settled as lost when its lease expires (the job's
 *   lost-attempt policy decides what happens next).
 * - `approval`: the handler's `requestApproval` was recorded: the job is
 *   PAUSED waiting for its owner and this attempt has ended. Return; nothing
 *   more is reported, and the owner's ALLOW re-queues the job for a new
 *   attempt.
 */
export type AbortKind = 'cancel' | 'pause' | 'lost' | 'shutdown' | 'approval';

/**
 * The `reason` of an aborted job signal. An `Error`, so that
 * `signal.throwIfAborted()` throws something with a stack, with the
 * `kind` handlers switch on.
 */
export class JobAbortedError extends Error {
  override readonly name = 'JobAbortedError';
  /** Why the signal was aborted. */
  readonly kind: AbortKind;

  constructor(kind: AbortKind) {
    super(ABORT_MESSAGES[kind]);
    this.kind = kind;
  }
}

const ABORT_MESSAGES: Readonly<Record<AbortKind, string>> = {
  cancel: 'the job was cancelled',
  pause: 'a pause was requested',
  lost: 'the attempt lost its authority',
  shutdown: 'the worker is shutting down',
  approval: 'the attempt ended waiting for approval',
};

/** The kind of an aborted job signal, or `undefined` when it is not aborted (or by something else). */
export function abortKindOf(signal: AbortSignal): AbortKind | undefined {
  if (!signal.aborted) return undefined;
  const reason: unknown = signal.reason;
  if (typeof reason === 'object' && reason !== null && (reason as { name?: unknown }).name === 'JobAbortedError') {
    return (reason as JobAbortedError).kind;
  }
  return undefined;
}

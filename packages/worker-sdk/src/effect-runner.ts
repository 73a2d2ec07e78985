import type { JsonObject } from '@bufbuild/protobuf';
import { IdempotencyKey, LIMITS, canonicalJson, sha256Hex, type EffectTransition, type JsonValue } from '@docket/contracts';
import { abortKindOf } from './abort-reason.js';
import { DocketWorkerError } from './docket-worker-error.js';
import type { EffectRecord, EffectRecovery, WorkerRecoveryReason } from './effect-record.js';
import { toJsonObject } from './json-object.js';
import type { WorkerLogger } from './worker-logger.js';

/** What a step of `job.effect` is told. */
export interface EffectStepContext {
  /** The effect's kind, as passed to `job.effect`. */
  readonly kind: string;
  /** The effect's idempotency key: send it to the external system, which must deduplicate by it. Never log it. */
  readonly key: string;
  /** The effect's input as recorded (the JSON object the digest was computed from). */
  readonly input: JsonObject;
  /** The job's signal: pass it on, so a cancel stops the external call. */
  readonly signal: AbortSignal;
  /**
   * False when this call created the record; true when the record already
   * existed (an earlier call or a lost attempt began it), so the external
   * system may already know the key: look it up before submitting again.
   */
  readonly resumed: boolean;
  /** The interruption this call resumed from, when the record was RECOVERABLE. */
  readonly recovery: EffectRecovery | undefined;
}

/** What the commit step is told: also the external id the sign step returned (now or in an earlier attempt). */
export interface EffectCommitContext extends EffectStepContext {
  /** The external system's id for the effect. Never log it. */
  readonly externalId: string;
}

/**
 * The steps of one external side effect, as `job.effect` drives them:
 * - `prepare` (optional) runs only when this call created the record, after
 *   it is durable and before `sign`: local bookkeeping wanted once per
 *   record. It is not run again when a later call resumes the record.
 * - `sign` performs or submits the external request, keyed by `key`, and
 *   resolves with the external system's id for it (1 to 256 characters).
 *   It may run more than once for one key (after a crash or an
 *   interruption), so the external system must deduplicate by `key`.
 * - `commit` confirms the effect (waits for it to settle, captures it,
 *   ...). It may also run more than once for one external id.
 * A step that throws leaves the record RECOVERABLE and the error is
 * rethrown. When the job was cancelled meanwhile, the cancellation is
 * recorded (CANCELLED_BEFORE_COMMIT); otherwise the reason is the thrown
 * {@link EffectRecoverableError}'s, else `INTERRUPTED` when the job's
 * signal aborted with pause or shutdown, `DEADLINE_EXCEEDED` for a
 * `TimeoutError`, `DEPENDENCY_UNAVAILABLE` in `prepare`/`sign` and
 * `OUTCOME_UNKNOWN` in `commit` (or when `sign` resolved with no usable id).
 */
export interface EffectSteps {
  prepare?(step: EffectStepContext): unknown;
  sign(step: EffectStepContext): string | Promise<string>;
  commit(step: EffectCommitContext): unknown;
}

/** What `job.effect` resolves with: the effect is COMMITTED. */
export interface EffectResult {
  readonly effectId: string;
  /** The external system's id for the effect. Never log it. */
  readonly externalId: string;
  /** True when the effect was already COMMITTED (by an earlier call or attempt): no step ran. */
  readonly replayed: boolean;
  /** True when this call finished a record that already existed (an earlier call or attempt began it). */
  readonly resumed: boolean;
}

/**
 * Thrown by a step to say why the effect was interrupted, and when it may
 * be tried again (advisory: recorded for the attempt that resumes it, in
 * `recovery.retryNotBefore`). `job.effect` records it and rethrows it.
 * Recognise it by `name`.
 */
export class EffectRecoverableError extends Error {
  override readonly name = 'EffectRecoverableError';
  readonly recoveryReason: WorkerRecoveryReason;
  readonly retryNotBefore: Date | undefined;

  constructor(recoveryReason: WorkerRecoveryReason, message: string, options?: { cause?: unknown; retryNotBefore?: Date }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.recoveryReason = recoveryReason;
    this.retryNotBefore = options?.retryNotBefore;
  }
}

/** Whether `error` is an {@link EffectRecoverableError} (judged by name, so across copies of the SDK). */
export function isEffectRecoverableError(error: unknown): error is EffectRecoverableError {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'EffectRecoverableError';
}

/**
 * The input digest BeginEffect binds to the key: SHA-256, as 64 lowercase
 * hex characters, of the RFC 8785 canonical JSON of `input` taken as a JSON
 * object (`JSON.stringify` rules first: `toJSON` honoured, `undefined`
 * members dropped). The same input gives the same digest in every attempt;
 * a different one under the same key is refused (ALREADY_EXISTS,
 * IDEMPOTENCY_CONFLICT).
 */
export function effectInputDigest(input: unknown): string {
  return digestOf(toJsonObject(input, 'the effect input'));
}

/** The effect-journal calls of one attempt (each sent with a fresh operation id and retried with it). */
export interface EffectJournal {
  /** BeginEffect: the record, and whether this call created it. */
  begin(kind: string, key: string, inputDigest: string): Promise<{ readonly record: EffectRecord; readonly created: boolean }>;
  /** AdvanceEffect at `record.revision`: the record after the transition. */
  advance(record: EffectRecord, transition: EffectTransition): Promise<EffectRecord>;
}

/** Where {@link runEffect} logs: never the key, the input or the external id. */
export interface EffectLog {
  readonly logger: WorkerLogger;
  readonly jobId: string;
}

const KIND_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;
const EXTERNAL_ID_MAX = LIMITS.effectExternalIdLength;

/**
 * Drives one effect to COMMITTED through the job's effect journal, exactly
 * once per key across attempts as far as the journal can see:
 *
 * 1. BeginEffect(kind, key, digest of input). COMMITTED: resolve with the
 *    stored external id (`replayed`), running no step.
 * 2. RECOVERABLE: resume it, back to PREPARED or SIGNED.
 * 3. PREPARED: `prepare` (when this call created the record), `sign`, then
 *    record SIGNED with the external id.
 * 4. SIGNED: `commit`, then record COMMITTED.
 *
 * Every transition names the revision of the last record seen. Before
 * `sign` and before `commit`, a cancelled job records the cancellation
 * (RECOVERABLE, CANCELLED_BEFORE_COMMIT) and rejects with the signal's
 * reason; a step that throws is recorded RECOVERABLE (see
 * {@link EffectSteps}) and its error rethrown. A cancel seen just after the
 * commit is recorded as observed after it; the commit stands and the call
 * resolves. A refused journal call rejects with its `DocketWorkerError`;
 * a step that already ran then runs again in the attempt that resumes the
 * record, which is why the external system must deduplicate by key.
 */
export async function runEffect(
  journal: EffectJournal,
  effect: { readonly kind: string; readonly key: string; readonly input: unknown },
  steps: EffectSteps,
  signal: AbortSignal,
  log: EffectLog,
): Promise<EffectResult> {
  const { kind, key } = effect;
  if (typeof kind !== 'string' || !KIND_PATTERN.test(kind)) throw DocketWorkerError.local('INVALID_OPTION', 'the effect kind must be 1 to 128 characters of [A-Za-z0-9._-]');
  try {
    new IdempotencyKey(key);
  } catch {
    throw DocketWorkerError.local('INVALID_OPTION', 'the effect key must be 16 to 128 characters of [A-Za-z0-9._~-]');
  }
  if (typeof steps?.sign !== 'function' || typeof steps.commit !== 'function') throw DocketWorkerError.local('INVALID_OPTION', 'an effect needs sign and commit steps');
  const input = toJsonObject(effect.input, 'the effect input');
  const begun = await journal.begin(kind, key, digestOf(input));
  let record = begun.record;
  const resumed = !begun.created;
  if (record.state === 'COMMITTED') {
    log.logger.debug?.(`${log.jobId}: effect ${kind} (${record.effectId}) was already committed; replayed`, { event: 'effect.replayed', jobId: log.jobId, effectId: record.effectId, kind });
    return { effectId: record.effectId, externalId: record.externalId ?? '', replayed: true, resumed };
  }
  const recovery = record.recovery;
  if (record.state === 'RECOVERABLE') record = await journal.advance(record, { kind: 'resume' });
  const step: EffectStepContext = Object.freeze({ kind, key, input, signal, resumed, recovery });
  const interrupt = (at: EffectRecord, error: unknown, phaseReason: WorkerRecoveryReason) => recordInterruption(journal, at, error, phaseReason, signal, log);

  if (record.state === 'PREPARED') {
    await stopIfCancelled(journal, record, signal, log);
    let externalId: string;
    let signReturned = false;
    try {
      if (begun.created && steps.prepare) await steps.prepare(step);
      const returned = await steps.sign(step);
      signReturned = true; // the request went out: an id that is no id leaves its outcome unknown
      externalId = checkExternalId(returned);
    } catch (error) {
      await interrupt(record, error, signReturned ? 'OUTCOME_UNKNOWN' : 'DEPENDENCY_UNAVAILABLE');
      throw error;
    }
    record = await journal.advance(record, { kind: 'signed', externalId });
  }
  if (record.state !== 'SIGNED') {
    throw new DocketWorkerError(13 /* INTERNAL */, undefined, `the effect journal answered with a ${record.state} effect where PREPARED or SIGNED was expected`);
  }
  const externalId = record.externalId ?? '';
  await stopIfCancelled(journal, record, signal, log);
  try {
    await steps.commit(Object.freeze({ ...step, externalId }));
  } catch (error) {
    await interrupt(record, error, 'OUTCOME_UNKNOWN');
    throw error;
  }
  record = await journal.advance(record, { kind: 'committed', externalId });
  log.logger.debug?.(`${log.jobId}: effect ${kind} (${record.effectId}) committed`, { event: 'effect.committed', jobId: log.jobId, effectId: record.effectId, kind });
  if (abortKindOf(signal) === 'cancel') {
    await journal.advance(record, { kind: 'cancelled' }).catch((error: unknown) => warnUnrecorded(log, record, 'the cancellation observed after the commit', error));
  }
  return { effectId: record.effectId, externalId, replayed: false, resumed };
}

function digestOf(input: JsonObject): string {
  let text: string;
  try {
    text = canonicalJson(input as JsonValue);
  } catch {
    throw DocketWorkerError.local('INVALID_OPTION', 'the effect input must be a JSON object without lone surrogates');
  }
  return sha256Hex(text);
}

function checkExternalId(value: unknown): string {
  if (typeof value !== 'string' || value.length < 1 || value.length > EXTERNAL_ID_MAX) {
    throw DocketWorkerError.local('INVALID_OPTION', `an effect's sign step must resolve with the external id, 1 to ${EXTERNAL_ID_MAX} characters`);
  }
  return value;
}

/** A cancelled job records the cancellation before the commit point and stops; a lost attempt just stops. */
async function stopIfCancelled(journal: EffectJournal, record: EffectRecord, signal: AbortSignal, log: EffectLog): Promise<void> {
  const kind = abortKindOf(signal);
  if (kind === 'cancel') {
    await journal.advance(record, { kind: 'cancelled' }).catch((error: unknown) => warnUnrecorded(log, record, 'the cancellation', error));
    throw signal.reason;
  }
  if (kind === 'lost' || kind === 'approval') throw signal.reason;
}

/** Records why a step failed (best effort: the record stays as it was when that fails too). */
async function recordInterruption(
  journal: EffectJournal,
  record: EffectRecord,
  error: unknown,
  phaseReason: WorkerRecoveryReason,
  signal: AbortSignal,
  log: EffectLog,
): Promise<void> {
  const stop = abortKindOf(signal);
  if (stop === 'lost' || stop === 'approval') return; // no authority to record anything with
  let transition: Extract<EffectTransition, { kind: 'recoverable' | 'cancelled' }>;
  if (stop === 'cancel') {
    transition = { kind: 'cancelled' };
  } else if (isEffectRecoverableError(error)) {
    transition = { kind: 'recoverable', reason: error.recoveryReason, retryNotBefore: error.retryNotBefore };
  } else if (stop === 'pause' || stop === 'shutdown') {
    transition = { kind: 'recoverable', reason: 'INTERRUPTED', retryNotBefore: undefined };
  } else if (isTimeout(error)) {
    transition = { kind: 'recoverable', reason: 'DEADLINE_EXCEEDED', retryNotBefore: undefined };
  } else {
    transition = { kind: 'recoverable', reason: phaseReason, retryNotBefore: undefined };
  }
  const what = transition.kind === 'cancelled' ? 'cancelled' : transition.reason;
  try {
    await journal.advance(record, transition);
    log.logger.warn(`${log.jobId}: effect ${record.kind} (${record.effectId}) interrupted in ${record.state} (${what}); an attempt that calls it with the same key resumes it`, {
      event: 'effect.interrupted', jobId: log.jobId, effectId: record.effectId, kind: record.kind, state: record.state, reason: what,
    });
  } catch (recordError) {
    warnUnrecorded(log, record, `the interruption (${what})`, recordError);
  }
}

function warnUnrecorded(log: EffectLog, record: EffectRecord, what: string, error: unknown): void {
  const failure = DocketWorkerError.fromCall('AdvanceEffect', error);
  log.logger.warn(`${log.jobId}: could not record ${what} of effect ${record.kind} (${record.effectId}): ${failure.reason ?? failure.code}`, {
    event: 'effect.unrecorded', jobId: log.jobId, effectId: record.effectId, kind: record.kind, code: failure.code, reason: failure.reason,
  });
}

function isTimeout(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'TimeoutError';
}

import { timestampDate } from '@bufbuild/protobuf/wkt';
import {
  EffectCancellation,
  EffectRecoveryReason,
  EffectState,
  type Effect,
} from '@docket/proto/docket/common/v1/effect_pb.js';
import type { EffectRecoveryReasonName, WorkerRecoveryReason } from '@docket/contracts';

/** Where an effect stands in the job's effect journal (`EffectState` without the prefix). */
export type EffectStateName = 'PREPARED' | 'SIGNED' | 'COMMITTED' | 'RECOVERABLE';

export type { EffectRecoveryReasonName, WorkerRecoveryReason };

/** The durable evidence of an effect's interruption; set only while it is RECOVERABLE. */
export interface EffectRecovery {
  /** The state a resume returns to. */
  readonly point: 'PREPARED' | 'SIGNED';
  readonly reason: EffectRecoveryReasonName;
  /** How many times the effect has entered RECOVERABLE, from 1 (kept across resumes). */
  readonly attempt: number;
  /** The earliest time the interrupting attempt asked for a retry; advisory. */
  readonly retryNotBefore: Date | undefined;
  /** The job attempt that recorded the interruption. */
  readonly attemptId: string;
  /** When it was recorded, by the database clock. */
  readonly recordedAt: Date | undefined;
}

/**
 * One record of the job's effect journal, as `job.recoverableEffects()`
 * lists them. `key` and `externalId` are the worker's and the external
 * system's identifiers: match records with them, never log them.
 */
export interface EffectRecord {
  readonly effectId: string;
  readonly kind: string;
  readonly state: EffectStateName;
  /** Grows by one with every transition; each transition names the revision it expects. */
  readonly revision: bigint;
  /** The idempotency key the effect was begun with. */
  readonly key: string;
  /** SHA-256 (hex) of the effect's canonical input; compare with `effectInputDigest(input)`. */
  readonly inputDigest: string;
  /** The external system's id, once SIGNED (kept through COMMITTED and a recovery from SIGNED). */
  readonly externalId: string | undefined;
  readonly recovery: EffectRecovery | undefined;
  readonly cancellation: 'NOT_REQUESTED' | 'CANCELLED_BEFORE_COMMIT' | 'OBSERVED_AFTER_COMMIT';
  /** The attempt that began the effect. */
  readonly attemptId: string;
  readonly createdAt: Date | undefined;
  readonly updatedAt: Date | undefined;
  readonly committedAt: Date | undefined;
}

/**
 * The wire's `Effect` as an {@link EffectRecord}. A state or reason this
 * SDK does not know (a newer service) is kept as its number's name, or
 * `UNSPECIFIED`, rather than guessed.
 */
export function effectRecordOf(effect: Effect): EffectRecord {
  const recovery = effect.recovery;
  return Object.freeze({
    effectId: effect.effectId,
    kind: effect.kind,
    state: EffectState[effect.state] as EffectStateName,
    revision: effect.revision,
    key: effect.idempotencyKey,
    inputDigest: effect.inputDigest,
    externalId: effect.externalId === '' ? undefined : effect.externalId,
    recovery: recovery
      ? Object.freeze({
          point: EffectState[recovery.point] as EffectRecovery['point'],
          reason: EffectRecoveryReason[recovery.reason] as EffectRecoveryReasonName,
          attempt: recovery.attempt,
          retryNotBefore: recovery.retryNotBefore ? timestampDate(recovery.retryNotBefore) : undefined,
          attemptId: recovery.attemptId,
          recordedAt: recovery.recordedAt ? timestampDate(recovery.recordedAt) : undefined,
        })
      : undefined,
    cancellation: (effect.cancellation === EffectCancellation.UNSPECIFIED ? 'NOT_REQUESTED' : EffectCancellation[effect.cancellation]) as EffectRecord['cancellation'],
    attemptId: effect.attemptId,
    createdAt: effect.createdAt ? timestampDate(effect.createdAt) : undefined,
    updatedAt: effect.updatedAt ? timestampDate(effect.updatedAt) : undefined,
    committedAt: effect.committedAt ? timestampDate(effect.committedAt) : undefined,
  });
}

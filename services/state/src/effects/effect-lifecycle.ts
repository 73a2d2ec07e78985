import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { DocketError, invalidField, type EffectRecoveryReasonName, type EffectTransition } from '@docket/contracts';
import {
  EffectCancellation,
  EffectRecoveryReason,
  EffectSchema,
  EffectState,
  type Effect,
} from '@docket/proto/docket/common/v1/effect_pb.js';
import type { Selectable } from 'kysely';
import type { JobEffectsTable } from '../db/tables/index.js';

/** A stored effect. */
export type EffectRow = Selectable<JobEffectsTable>;


/** Who advances the effect, and when (the database clock). */
export interface EffectActor {
  readonly attemptId: string;
  readonly now: Date;
}

/**
 * The effect after one transition (source design 004), pure:
 *
 * | from        | signed  | committed (same id) | recoverable | resume        | cancelled                        |
 * |-------------|---------|---------------------|-------------|---------------|----------------------------------|
 * | PREPARED    | SIGNED  | -                   | RECOVERABLE | -             | RECOVERABLE(CANCELLED_BEFORE_COMMIT) |
 * | SIGNED      | -       | COMMITTED           | RECOVERABLE | -             | RECOVERABLE(CANCELLED_BEFORE_COMMIT) |
 * | RECOVERABLE | -       | -                   | -           | its point     | -                                |
 * | COMMITTED   | -       | -                   | -           | -             | COMMITTED, OBSERVED_AFTER_COMMIT |
 *
 * "-" is ILLEGAL_TRANSITION (nothing changes); a commit naming another
 * external id than the one SIGNED recorded is INVALID_FIELD. The recovery
 * point is the state the effect left; a resume returns to it (keeping the
 * external id of a SIGNED effect) and clears a cancellation recorded before
 * the commit. The revision grows by one with every transition; the caller
 * has checked the expected revision.
 */
export function advanceEffect(effect: EffectRow, transition: EffectTransition, actor: EffectActor): EffectRow {
  const next = { ...effect, revision: effect.revision + 1n, updated_at: actor.now };
  switch (effect.state) {
    case 'COMMITTED':
      if (transition.kind === 'cancelled') return { ...next, cancellation: 'OBSERVED_AFTER_COMMIT' };
      throw illegal(effect.state, transition, 'a COMMITTED effect accepts nothing but a cancellation, which is only recorded');
    case 'RECOVERABLE': {
      if (transition.kind !== 'resume') throw illegal(effect.state, transition, 'a RECOVERABLE effect accepts only resume');
      const point = effect.recovery?.['point'] === 'SIGNED' ? 'SIGNED' : 'PREPARED';
      return { ...next, state: point, recovery: null, cancellation: 'NOT_REQUESTED' };
    }
    case 'PREPARED':
    case 'SIGNED':
      switch (transition.kind) {
        case 'signed':
          if (effect.state !== 'PREPARED') throw illegal(effect.state, transition, 'only a PREPARED effect can be SIGNED');
          return { ...next, state: 'SIGNED', external_id: transition.externalId };
        case 'committed':
          if (effect.state !== 'SIGNED') throw illegal(effect.state, transition, 'only a SIGNED effect can be COMMITTED');
          if (transition.externalId !== effect.external_id) throw invalidField('committed.external_id', 'must equal the external id recorded when the effect was SIGNED');
          return { ...next, state: 'COMMITTED', committed_at: actor.now };
        case 'recoverable':
          return interrupted(next, effect.state, transition.reason, transition.retryNotBefore, actor);
        case 'cancelled':
          return { ...interrupted(next, effect.state, 'CANCELLED_BEFORE_COMMIT', undefined, actor), cancellation: 'CANCELLED_BEFORE_COMMIT' };
        case 'resume':
          throw illegal(effect.state, transition, 'only a RECOVERABLE effect can be resumed');
      }
  }
}

function interrupted(
  next: EffectRow,
  point: 'PREPARED' | 'SIGNED',
  reason: EffectRecoveryReasonName,
  retryNotBefore: Date | undefined,
  actor: EffectActor,
): EffectRow {
  return {
    ...next,
    state: 'RECOVERABLE',
    recoveries: next.recoveries + 1,
    recovery: {
      point,
      reason,
      retry_not_before: retryNotBefore ? retryNotBefore.toISOString() : null,
      attempt_id: actor.attemptId,
      recorded_at: actor.now.toISOString(),
    },
  };
}

function illegal(from: string, transition: EffectTransition, message: string): DocketError {
  return new DocketError('ILLEGAL_TRANSITION', message, { metadata: { from, transition: transition.kind } });
}

/** The public form of a stored effect. */
export function projectEffect(row: EffectRow): Effect {
  const recovery = row.recovery;
  return create(EffectSchema, {
    effectId: row.id,
    kind: row.kind,
    state: EffectState[row.state],
    revision: row.revision,
    externalId: row.external_id ?? '',
    recovery: recovery
      ? {
          point: EffectState[recovery['point'] === 'SIGNED' ? 'SIGNED' : 'PREPARED'],
          reason: EffectRecoveryReason[String(recovery['reason']) as EffectRecoveryReasonName] ?? EffectRecoveryReason.UNSPECIFIED,
          attempt: row.recoveries,
          retryNotBefore: typeof recovery['retry_not_before'] === 'string' ? timestampFromDate(new Date(recovery['retry_not_before'])) : undefined,
          attemptId: String(recovery['attempt_id'] ?? ''),
          recordedAt: typeof recovery['recorded_at'] === 'string' ? timestampFromDate(new Date(recovery['recorded_at'])) : undefined,
        }
      : undefined,
    cancellation: EffectCancellation[row.cancellation],
    jobId: row.job_id,
    idempotencyKey: row.idempotency_key,
    inputDigest: row.input_digest,
    attemptId: row.attempt_id,
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
    committedAt: row.committed_at ? timestampFromDate(row.committed_at) : undefined,
  });
}

import { timestampDate } from '@bufbuild/protobuf/wkt';
import {
  LIMITS,
  invalidField,
  newId,
  parseIdempotencyKey,
  parseRequestDigest,
  type EffectTransition,
  type IdempotencyKey,
  type WorkerRecoveryReason,
} from '@docket/contracts';
import { EffectRecoveryReason } from '@docket/proto/docket/common/v1/effect_pb.js';
import type { AdvanceEffectRequest, BeginEffectRequest } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import type { JobRow } from '../db/queries/jobs.js';
import type { EffectRow } from './effect-lifecycle.js';

/** Effect kinds: 1 to 128 characters of [A-Za-z0-9._-]. */
const KIND_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;
/** Effect ids as this service mints them. */
const EFFECT_ID_PATTERN = /^eff_[A-Za-z0-9_-]{4,124}$/;

/** A checked BeginEffect. The key is kept as data and never logged. */
export interface BeginEffect {
  readonly kind: string;
  readonly key: IdempotencyKey;
  readonly inputDigest: string;
}

/** Checks BeginEffect's fields (INVALID_FIELD) before anything is read. */
export function parseBeginEffect(request: BeginEffectRequest): BeginEffect {
  if (!KIND_PATTERN.test(request.kind)) throw invalidField('kind', 'must be 1 to 128 characters of [A-Za-z0-9._-]');
  const key = parseIdempotencyKey(request.idempotencyKey, 'idempotency_key');
  const inputDigest = parseRequestDigest(request.inputDigest, 'input_digest');
  return { kind: request.kind, key, inputDigest };
}

/** A checked AdvanceEffect. */
export interface AdvanceEffect {
  readonly effectId: string;
  readonly expectedRevision: bigint;
  readonly transition: EffectTransition;
}

/** Checks AdvanceEffect's fields (INVALID_FIELD) before anything is read. */
export function parseAdvanceEffect(request: AdvanceEffectRequest): AdvanceEffect {
  if (!EFFECT_ID_PATTERN.test(request.effectId)) throw invalidField('effect_id', 'must be a Docket effect id');
  if (request.expectedRevision < 1n) throw invalidField('expected_revision', 'must be at least 1');
  return { effectId: request.effectId, expectedRevision: request.expectedRevision, transition: transitionOf(request.transition) };
}

function transitionOf(transition: AdvanceEffectRequest['transition']): EffectTransition {
  switch (transition.case) {
    case 'signed':
      return { kind: 'signed', externalId: externalId(transition.value.externalId, 'signed.external_id') };
    case 'committed':
      return { kind: 'committed', externalId: externalId(transition.value.externalId, 'committed.external_id') };
    case 'recoverable': {
      const name = EffectRecoveryReason[transition.value.reason] as string | undefined;
      if (name === undefined || name === 'UNSPECIFIED' || name === 'CANCELLED_BEFORE_COMMIT') {
        throw invalidField('recoverable.reason', 'must be DEPENDENCY_UNAVAILABLE, OUTCOME_UNKNOWN, DEADLINE_EXCEEDED or INTERRUPTED');
      }
      const retryNotBefore = transition.value.retryNotBefore ? timestampDate(transition.value.retryNotBefore) : undefined;
      return { kind: 'recoverable', reason: name as WorkerRecoveryReason, retryNotBefore };
    }
    case 'resume':
      return { kind: 'resume' };
    case 'cancelled':
      return { kind: 'cancelled' };
    default:
      throw invalidField('transition', 'must be one of signed, committed, recoverable, resume or cancelled');
  }
}

function externalId(value: string, field: string): string {
  if (value.length < 1 || value.length > LIMITS.effectExternalIdLength || value.includes('\u0000')) throw invalidField(field, 'must be 1 to 256 characters');
  return value;
}

/** A new PREPARED record for the job's current attempt, revision 1. */
export function newEffect(job: JobRow, begin: BeginEffect, now: Date): EffectRow {
  return {
    id: newId('eff'),
    job_id: job.id,
    kind: begin.kind,
    idempotency_key: begin.key.reveal(),
    input_digest: begin.inputDigest,
    state: 'PREPARED',
    revision: 1n,
    external_id: null,
    recovery: null,
    recoveries: 0,
    cancellation: 'NOT_REQUESTED',
    attempt_id: job.current_attempt_id ?? '',
    created_at: now,
    updated_at: now,
    committed_at: null,
  };
}

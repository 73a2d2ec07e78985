import { create } from '@bufbuild/protobuf';
import { DocketError, notFound, type EffectTransition } from '@docket/contracts';
import { AdvanceEffectRequestSchema, AdvanceEffectResponseSchema } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { parseAdvanceEffect } from '../effects/effect-calls.js';
import { advanceEffect as advancedEffect, projectEffect } from '../effects/effect-lifecycle.js';
import { attemptReport, type AttemptReport, type ReportRequest } from './attempt-report.js';
import { effectTransition } from './attempt-writes.js';

const ADVANCE_EFFECT = { case: 'advanceEffect', rpc: 'AdvanceEffect', requestSchema: AdvanceEffectRequestSchema, responseSchema: AdvanceEffectResponseSchema } as const;

/** The journal event each effect transition records. */
const EFFECT_EVENT_TYPES = {
  signed: 'effect.signed',
  committed: 'effect.committed',
  recoverable: 'effect.recoverable',
  resume: 'effect.resumed',
  cancelled: 'effect.cancelled',
} as const satisfies Record<EffectTransition['kind'], string>;

/**
 * AdvanceEffect: the job's effect moves one step of its lifecycle (see
 * `advanceEffect` in effects/effect-lifecycle.ts) at the revision the
 * worker last saw, else REVISION_MISMATCH; journaled as `effect.<step>`.
 */
export function advanceEffect(subject: string, request: ReportRequest<'advanceEffect'>): AttemptReport {
  const advance = parseAdvanceEffect(request);
  return attemptReport(subject, ADVANCE_EFFECT, request, (job, writes, now, _settings, reads) => {
    const effect = writes.effect(advance.effectId) ?? reads.effects.find((candidate) => candidate.id === advance.effectId);
    if (!effect || effect.job_id !== job.id) throw notFound('effect');
    if (effect.revision !== advance.expectedRevision) {
      throw new DocketError('REVISION_MISMATCH', 'the effect has changed since the expected revision', { metadata: { revision: effect.revision.toString() } });
    }
    const advanced = advancedEffect(effect, advance.transition, { attemptId: job.current_attempt_id ?? '', now });
    effectTransition(writes, job, advanced, EFFECT_EVENT_TYPES[advance.transition.kind], now);
    return create(AdvanceEffectResponseSchema, { effect: projectEffect(advanced) });
  }, { ids: [advance.effectId], keys: [] });
}

import { create } from '@bufbuild/protobuf';
import { DocketError } from '@docket/contracts';
import { EffectDisposition } from '@docket/proto/docket/common/v1/effect_pb.js';
import { BeginEffectRequestSchema, BeginEffectResponseSchema } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { newEffect, parseBeginEffect } from '../effects/effect-calls.js';
import { projectEffect } from '../effects/effect-lifecycle.js';
import { attemptReport, type AttemptReport, type ReportRequest } from './attempt-report.js';
import { effectTransition } from './attempt-writes.js';

const BEGIN_EFFECT = { case: 'beginEffect', rpc: 'BeginEffect', requestSchema: BeginEffectRequestSchema, responseSchema: BeginEffectResponseSchema } as const;

/**
 * BeginEffect: the job's effect under the call's key, created PREPARED and
 * journaled as `effect.prepared`, or the one already there (REPLAYED); a
 * key already bound to another kind or input digest is IDEMPOTENCY_CONFLICT.
 */
export function beginEffect(subject: string, request: ReportRequest<'beginEffect'>): AttemptReport {
  const begin = parseBeginEffect(request);
  const key = begin.key.reveal();
  return attemptReport(subject, BEGIN_EFFECT, request, (job, writes, now, _settings, reads) => {
    const found = writes.effectByKey(job.id, key) ?? reads.effects.find((effect) => effect.job_id === job.id && effect.idempotency_key === key);
    if (found) {
      if (found.kind !== begin.kind || found.input_digest !== begin.inputDigest) {
        throw new DocketError('IDEMPOTENCY_CONFLICT', 'the effect key is already bound to another kind or input digest');
      }
      return create(BeginEffectResponseSchema, { effect: projectEffect(found), disposition: EffectDisposition.REPLAYED });
    }
    const created = newEffect(job, begin, now);
    effectTransition(writes, job, created, 'effect.prepared', now);
    return create(BeginEffectResponseSchema, { effect: projectEffect(created), disposition: EffectDisposition.CREATED });
  }, { ids: [], keys: [key] });
}

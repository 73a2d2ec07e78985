import { create } from '@bufbuild/protobuf';
import { SaveCheckpointRequestSchema, SaveCheckpointResponseSchema } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { checkedJsonBytes } from '../admission/json-limits.js';
import { planTransition } from '../transitions/transition-plan.js';
import { attemptReport, type AttemptReport, type ReportRequest } from './attempt-report.js';
import { attemptEvent } from './attempt-writes.js';

const SAVE_CHECKPOINT = { case: 'saveCheckpoint', rpc: 'SaveCheckpoint', requestSchema: SaveCheckpointRequestSchema, responseSchema: SaveCheckpointResponseSchema } as const;

/** SaveCheckpoint: the checkpoint is kept for the next attempt and journaled as `checkpoint.saved` (its size, not its content). */
export function saveCheckpoint(subject: string, request: ReportRequest<'saveCheckpoint'>): AttemptReport {
  const checkpoint = request.checkpoint ?? {};
  const bytes = checkedJsonBytes(checkpoint, 'checkpoint', 'checkpointBytes');
  return attemptReport(subject, SAVE_CHECKPOINT, request, (job, writes, now) => {
    writes.transition(planTransition(job, { events: [attemptEvent(job, 'checkpoint.saved', { bytes })], patch: { checkpoint } }, now));
    return create(SaveCheckpointResponseSchema, {});
  });
}

import { create, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  LIMITS,
  canonicalJsonByteLength,
  containsNul,
  invalidField,
  isWorkerFailureClass,
  limitExceeded,
  validateEventBatch,
  type FailureClassName,
} from '@docket/contracts';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import type { AttemptRef } from '@docket/proto/docket/common/v1/attempt_pb.js';
import {
  AppendEventsRequestSchema,
  AppendEventsResponseSchema,
  RenewAttemptRequestSchema,
  RenewAttemptResponseSchema,
  ReportOutcomeRequestSchema,
  ReportOutcomeResponseSchema,
  ReportProgressRequestSchema,
  ReportProgressResponseSchema,
  SaveCheckpointRequestSchema,
  SaveCheckpointResponseSchema,
  type ReportOutcomeRequest,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import type { HandleWorkerCallRequest } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { JobRow } from '../db/queries/jobs.js';
import type { WorkerOperationRow } from '../db/queries/worker-operations.js';
import type { JsonObject } from '../db/tables/index.js';
import { planTransition } from './apply-transition.js';
import { planAttemptEnding, type AttemptEnding } from './attempt-ending.js';
import { projectJob } from './job-projection.js';
import type { JobWriteSet } from './job-write-set.js';
import type { ExecutionSettings } from './register-worker.js';
import { WORKER_OPERATION_TTL_MS, operationDigest } from './worker-operation.js';

const MESSAGE_MAX = { progress: 1024, failure: 4096 } as const;

/** The attempt-scoped worker RPCs, by their HandleWorkerCall case. */
export type AttemptReportCase = 'renewAttempt' | 'reportProgress' | 'saveCheckpoint' | 'appendEvents' | 'reportOutcome';

/**
 * One attempt-scoped worker call, checked and ready to decide: who calls,
 * the authority it claims, its operation id and digest, and `perform`, which
 * applies the call to the job (as this batch has left it, under the row
 * lock) by adding rows to the batch's write set, and returns the response.
 * `perform` is pure until it adds rows: a call it refuses writes nothing.
 */
export interface AttemptReport<Res extends DescMessage = DescMessage> {
  readonly case: AttemptReportCase;
  readonly subject: string;
  readonly rpc: string;
  readonly attempt: AttemptRef | undefined;
  readonly incarnation: string;
  readonly operationId: string;
  readonly digest: string;
  readonly responseSchema: Res;
  perform(job: JobRow, writes: JobWriteSet, now: Date, settings: ExecutionSettings): MessageShape<Res>;
}

type ReportCall = Extract<HandleWorkerCallRequest['request'], { case: AttemptReportCase }>;

/**
 * Checks an attempt-scoped call (field errors and limits, before anything
 * is read) and turns it into an {@link AttemptReport}.
 */
export function parseAttemptReport(subject: string, call: ReportCall): AttemptReport {
  switch (call.case) {
    case 'renewAttempt':
      return report(subject, call.case, 'RenewAttempt', RenewAttemptRequestSchema, call.value, RenewAttemptResponseSchema, (job, writes, now, settings) => {
        const leaseExpiresAt = new Date(now.getTime() + settings.leaseMs);
        writes.update({ ...job, lease_expires_at: leaseExpiresAt });
        return create(RenewAttemptResponseSchema, {
          leaseExpiresAt: timestampFromDate(leaseExpiresAt),
          cancelRequested: job.status === 'CANCELLING',
          pauseRequested: job.pause_requested,
        });
      });
    case 'reportProgress': {
      const progress = call.value.progress;
      if (!progress || progress.completedUnits < 0n || progress.totalUnits < 0n) {
        throw invalidField('progress', 'must have non-negative completed_units and total_units');
      }
      if (progress.message.length > MESSAGE_MAX.progress) throw invalidField('progress.message', 'must be at most 1024 characters');
      // Progress: the latest on the job (current authority only; not a journal event, no revision change), announced live.
      return report(subject, call.case, 'ReportProgress', ReportProgressRequestSchema, call.value, ReportProgressResponseSchema, (job, writes, now) => {
        const stored = {
          completed_units: progress.completedUnits.toString(),
          total_units: progress.totalUnits.toString(),
          message: progress.message,
          updated_at: now.toISOString(),
        };
        const updated = { ...job, progress: stored };
        writes.update(updated);
        writes.announceProgress(updated, stored);
        return create(ReportProgressResponseSchema, { cancelRequested: job.status === 'CANCELLING', pauseRequested: job.pause_requested });
      });
    }
    case 'saveCheckpoint': {
      const checkpoint = call.value.checkpoint ?? {};
      const bytes = checkedJsonBytes(checkpoint, 'checkpoint', 'checkpointBytes');
      // The checkpoint is kept for the next attempt and journaled as `checkpoint.saved`.
      return report(subject, call.case, 'SaveCheckpoint', SaveCheckpointRequestSchema, call.value, SaveCheckpointResponseSchema, (job, writes, now) => {
        writes.transition(planTransition(job, { events: [attemptEvent(job, 'checkpoint.saved', { bytes })], patch: { checkpoint } }, now));
        return create(SaveCheckpointResponseSchema, {});
      });
    }
    case 'appendEvents': {
      const events = call.value.events.map((event) => ({ type: event.type, payload: event.payload ?? {} }));
      validateEventBatch(events);
      events.forEach((event, index) => {
        if (!event.type.startsWith('worker.')) throw invalidField(`events[${index}].type`, 'must start with worker.');
      });
      // Worker events (types under `worker.`) journaled as the current attempt.
      return report(subject, call.case, 'AppendEvents', AppendEventsRequestSchema, call.value, AppendEventsResponseSchema, (job, writes, now) => {
        const planned = planTransition(job, { events: events.map((event) => attemptEvent(job, event.type, event.payload)) }, now);
        writes.transition(planned);
        return create(AppendEventsResponseSchema, { firstSequence: planned.firstSequence, lastSequence: planned.lastSequence });
      });
    }
    case 'reportOutcome': {
      const ending = endingOf(call.value);
      // The attempt ends (see `planAttemptEnding`) and the answer is the job.
      return report(subject, call.case, 'ReportOutcome', ReportOutcomeRequestSchema, call.value, ReportOutcomeResponseSchema, (job, writes, now) => {
        const ended = planAttemptEnding(job, ending, now);
        const planned = planTransition(job, ended.transition, now);
        if (job.current_attempt_id) writes.endedAttempts.push({ id: job.current_attempt_id, status: ended.attemptStatus });
        writes.transition(planned);
        return create(ReportOutcomeResponseSchema, { job: projectJob(planned.job) });
      });
    }
  }
}

function report<Req extends DescMessage, Res extends DescMessage>(
  subject: string,
  reportCase: AttemptReportCase,
  rpc: string,
  requestSchema: Req,
  request: MessageShape<Req> & { operationId: string; attempt?: AttemptRef | undefined },
  responseSchema: Res,
  perform: AttemptReport<Res>['perform'],
): AttemptReport<Res> {
  const incarnation = request.attempt?.workerIncarnation ?? '';
  return {
    case: reportCase,
    subject,
    rpc,
    attempt: request.attempt,
    incarnation,
    operationId: request.operationId,
    digest: operationDigest(rpc, incarnation, requestSchema, request),
    responseSchema,
    perform,
  };
}

/** Records a decided call's response with its effect, for replay by operation id. */
export function recordOperation<Res extends DescMessage>(
  writes: JobWriteSet,
  call: { readonly incarnation: string; readonly operationId: string; readonly rpc: string; readonly digest: string; readonly responseSchema: Res },
  response: MessageShape<Res>,
  now: Date,
): WorkerOperationRow {
  const row: WorkerOperationRow = {
    worker_incarnation: call.incarnation,
    operation_id: call.operationId,
    rpc: call.rpc,
    request_digest: call.digest,
    response: Buffer.from(toBinary(call.responseSchema, response)),
    created_at: now,
    expires_at: new Date(now.getTime() + WORKER_OPERATION_TTL_MS),
  };
  writes.operations.push(row);
  return row;
}

function endingOf(request: ReportOutcomeRequest): AttemptEnding {
  const outcome = request.outcome;
  switch (outcome.case) {
    case 'success': {
      const result = outcome.value.result ?? {};
      checkedJsonBytes(result, 'success.result', 'resultBytes');
      return { kind: 'succeeded', result };
    }
    case 'failure': {
      const name = FailureClass[outcome.value.failureClass] as string | undefined;
      if (name === undefined || !isWorkerFailureClass(name)) {
        throw invalidField('failure.failure_class', 'must be a failure class a worker may report (not UNSPECIFIED, CANCELLED, LOST_ATTEMPT or APPROVAL_DENIED)');
      }
      if (outcome.value.message.length > MESSAGE_MAX.failure) throw invalidField('failure.message', 'must be at most 4096 characters');
      const safeDetails = outcome.value.safeDetails ?? {};
      checkedJsonBytes(safeDetails, 'failure.safe_details', 'eventPayloadBytes');
      return { kind: 'failed', failureClass: name as FailureClassName, message: outcome.value.message, safeDetails };
    }
    case 'cancelled':
      return { kind: 'cancelled' };
    case 'paused':
      return { kind: 'paused' };
    default:
      throw invalidField('outcome', 'must be one of success, failure, cancelled or paused');
  }
}

function attemptEvent(job: JobRow, type: string, payload: JsonObject) {
  return { type, payload, ...(job.current_attempt_id ? { attemptId: job.current_attempt_id } : {}), fence: BigInt(job.fence) };
}

function checkedJsonBytes(value: JsonObject, field: string, limit: 'checkpointBytes' | 'resultBytes' | 'eventPayloadBytes'): number {
  if (containsNul(value)) throw invalidField(field, 'must not contain the NUL character');
  const bytes = canonicalJsonByteLength(value);
  if (bytes > LIMITS[limit]) throw limitExceeded(limit, field);
  return bytes;
}

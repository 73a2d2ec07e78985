import { create, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  DocketError,
  LIMITS,
  newId,
  notFound,
  canonicalJsonByteLength,
  containsNul,
  invalidField,
  isWorkerFailureClass,
  limitExceeded,
  validateEventBatch,
  type FailureClassName,
} from '@docket/contracts';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { boundedLease } from '../attempts/attempt-limits.js';
import type { AttemptRef } from '@docket/proto/docket/common/v1/attempt_pb.js';
import { EffectDisposition } from '@docket/proto/docket/common/v1/effect_pb.js';
import {
  AckSignalsRequestSchema,
  AckSignalsResponseSchema,
  AdvanceEffectRequestSchema,
  AdvanceEffectResponseSchema,
  BeginEffectRequestSchema,
  BeginEffectResponseSchema,
  RequestApprovalRequestSchema,
  RequestApprovalResponseSchema,
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
import { planTransition } from '../transitions/transition-plan.js';
import { planAttemptEnding, type AttemptEnding } from '../attempts/attempt-ending.js';
import { projectJob } from '../reads/job-projection.js';
import { checkedJsonBytes } from '../admission/json-limits.js';
import { advanceEffect, projectEffect, type EffectRow, type EffectTransition } from '../effects/effect-lifecycle.js';
import { newEffect, parseAdvanceEffect, parseBeginEffect } from '../effects/effect-calls.js';
import { planAcknowledgement, planDelivery, type InboxChange } from '../signals/signal-inbox.js';
import type { SignalRow } from '../db/queries/signals.js';
import type { JobWriteSet } from '../transitions/job-write-set.js';
import type { ExecutionSettings } from '../workers/register-worker.js';
import { WORKER_OPERATION_TTL_MS, operationDigest } from './worker-operation.js';

const MESSAGE_MAX = { progress: 1024, failure: 4096, prompt: LIMITS.approvalPromptLength } as const;

/** The attempt-scoped worker RPCs that write, by their HandleWorkerCall case. */
export type AttemptReportCase =
  | 'renewAttempt'
  | 'reportProgress'
  | 'saveCheckpoint'
  | 'appendEvents'
  | 'reportOutcome'
  | 'ackSignals'
  | 'requestApproval'
  | 'beginEffect'
  | 'advanceEffect';

/**
 * What a batch read, after locking its jobs, for the calls that need more
 * than the job row: the outstanding signals of the jobs it renews (for
 * jobs that have any) and the effects the calls name.
 */
export interface ReportReads {
  readonly signals: ReadonlyMap<string, readonly SignalRow[]>;
  readonly effects: readonly EffectRow[];
}

/** The effects a call names, to be read with its batch. */
export interface EffectNeeds {
  readonly ids: readonly string[];
  readonly keys: readonly string[];
}

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
  /** Effects to read before deciding (BeginEffect by key, AdvanceEffect by id). */
  readonly effects?: EffectNeeds;
  perform(job: JobRow, writes: JobWriteSet, now: Date, settings: ExecutionSettings, reads: ReportReads): MessageShape<Res>;
}

type ReportCall = Extract<HandleWorkerCallRequest['request'], { case: AttemptReportCase }>;

/**
 * Checks an attempt-scoped call (field errors and limits, before anything
 * is read) and turns it into an {@link AttemptReport}.
 */
export function parseAttemptReport(subject: string, call: ReportCall): AttemptReport {
  switch (call.case) {
    case 'renewAttempt':
      // The lease is extended and the job's outstanding signals are handed to the attempt.
      return report(subject, call.case, 'RenewAttempt', RenewAttemptRequestSchema, call.value, RenewAttemptResponseSchema, (job, writes, now, settings, reads) => {
        const lease = boundedLease(job, now, settings.leaseMs);
        const leaseExpiresAt = lease.lease_expires_at;
        const renewed = { ...job, ...lease };
        const delivery = planDelivery(renewed, job.current_attempt_id ?? '', reads.signals.get(job.id) ?? []);
        if (delivery.change.events.length === 0) writes.update(renewed);
        else inboxTransition(writes, renewed, delivery.change, now);
        return create(RenewAttemptResponseSchema, {
          leaseExpiresAt: timestampFromDate(leaseExpiresAt),
          cancelRequested: job.status === 'CANCELLING',
          pauseRequested: job.pause_requested,
          pendingSignals: delivery.signals,
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
        return create(ReportOutcomeResponseSchema, { job: projectJob(endAttempt(writes, job, ending, now)) });
      });
    }
    case 'ackSignals': {
      const upTo = call.value.upToSequence;
      // The signals delivered to this attempt up to `up_to_sequence` are acknowledged.
      return report(subject, call.case, 'AckSignals', AckSignalsRequestSchema, call.value, AckSignalsResponseSchema, (job, writes, now) => {
        const change = planAcknowledgement(job, upTo);
        if (change.events.length > 0) inboxTransition(writes, job, change, now);
        return create(AckSignalsResponseSchema, {});
      });
    }
    case 'requestApproval': {
      const { prompt } = call.value;
      if (prompt.length < 1 || prompt.length > MESSAGE_MAX.prompt) throw invalidField('prompt', 'must be 1 to 4096 characters');
      const details = call.value.details ?? {};
      checkedJsonBytes(details, 'details', 'eventPayloadBytes');
      // The attempt ends with the job PAUSED, waiting for the owner's decision.
      const parsed: AttemptReport<typeof RequestApprovalResponseSchema> = report(subject, call.case, 'RequestApproval', RequestApprovalRequestSchema, call.value, RequestApprovalResponseSchema, (job, writes, now) => {
        const approval = { approval_id: newId('apr'), prompt, details, request_digest: parsed.digest, requested_at: now.toISOString() };
        endAttempt(writes, job, { kind: 'approval', approval }, now);
        return create(RequestApprovalResponseSchema, { approvalId: approval.approval_id });
      });
      return parsed;
    }
    case 'beginEffect': {
      const begin = parseBeginEffect(call.value);
      return report(subject, call.case, 'BeginEffect', BeginEffectRequestSchema, call.value, BeginEffectResponseSchema, (job, writes, now, _settings, reads) => {
        const key = begin.key.reveal();
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
      }, { ids: [], keys: [begin.key.reveal()] });
    }
    case 'advanceEffect': {
      const advance = parseAdvanceEffect(call.value);
      return report(subject, call.case, 'AdvanceEffect', AdvanceEffectRequestSchema, call.value, AdvanceEffectResponseSchema, (job, writes, now, _settings, reads) => {
        const effect = writes.effect(advance.effectId) ?? reads.effects.find((candidate) => candidate.id === advance.effectId);
        if (!effect || effect.job_id !== job.id) throw notFound('effect');
        if (BigInt(effect.revision) !== advance.expectedRevision) {
          throw new DocketError('REVISION_MISMATCH', 'the effect has changed since the expected revision', { metadata: { revision: effect.revision } });
        }
        const advanced = advanceEffect(effect, advance.transition, { attemptId: job.current_attempt_id ?? '', now });
        effectTransition(writes, job, advanced, EFFECT_EVENT_TYPES[advance.transition.kind], now);
        return create(AdvanceEffectResponseSchema, { effect: projectEffect(advanced) });
      }, { ids: [advance.effectId], keys: [] });
    }
  }
}

/** The journal event each effect transition records. */
const EFFECT_EVENT_TYPES = {
  signed: 'effect.signed',
  committed: 'effect.committed',
  recoverable: 'effect.recoverable',
  resume: 'effect.resumed',
  cancelled: 'effect.cancelled',
} as const satisfies Record<EffectTransition['kind'], string>;

/** Ends the job's current attempt (an outcome or an approval request) into `writes`; the job as left. */
function endAttempt(writes: JobWriteSet, job: JobRow, ending: AttemptEnding, now: Date): JobRow {
  const ended = planAttemptEnding(job, ending, now);
  const planned = planTransition(job, ended.transition, now);
  if (job.current_attempt_id) writes.endedAttempts.push({ id: job.current_attempt_id, status: ended.attemptStatus });
  writes.transition(planned);
  writes.signalMoves.push(...ended.signalMoves);
  return planned.job;
}

/** An inbox change of a running job, journaled as its current attempt. */
function inboxTransition(writes: JobWriteSet, job: JobRow, change: InboxChange, now: Date): void {
  writes.transition(planTransition(job, { events: change.events.map((event) => attemptEvent(job, event.type, event.payload)), patch: change.patch }, now));
  writes.signalMoves.push(...change.moves);
}

/** A created or advanced effect, journaled (`effect.*` with its id, kind, state and revision; never its key). */
function effectTransition(writes: JobWriteSet, job: JobRow, effect: EffectRow, type: string, now: Date): void {
  const payload: JsonObject = { effect_id: effect.id, kind: effect.kind, state: effect.state, revision: effect.revision };
  if (effect.cancellation !== 'NOT_REQUESTED') payload['cancellation'] = effect.cancellation;
  if (effect.recovery) payload['reason'] = effect.recovery['reason'] ?? null;
  writes.transition(planTransition(job, { events: [attemptEvent(job, type, payload)] }, now));
  writes.effects.set(effect.id, effect);
}

function report<Req extends DescMessage, Res extends DescMessage>(
  subject: string,
  reportCase: AttemptReportCase,
  rpc: string,
  requestSchema: Req,
  request: MessageShape<Req> & { operationId: string; attempt?: AttemptRef | undefined },
  responseSchema: Res,
  perform: AttemptReport<Res>['perform'],
  effects?: EffectNeeds,
): AttemptReport<Res> {
  const incarnation = request.attempt?.workerIncarnation ?? '';
  return {
    ...(effects ? { effects } : {}),
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

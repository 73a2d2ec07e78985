import { create, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Kysely } from 'kysely';
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
  type AppendEventsRequest,
  type RenewAttemptRequest,
  type ReportOutcomeRequest,
  type ReportProgressRequest,
  type SaveCheckpointRequest,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import type { AttemptRef } from '@docket/proto/docket/common/v1/attempt_pb.js';
import { endAttempt } from '../db/queries/attempts.js';
import { transactionNow } from '../db/queries/clock.js';
import { announceProgress } from '../db/queries/job-changes.js';
import { updateJob } from '../db/queries/jobs.js';
import { readIncarnation } from '../db/queries/workers.js';
import type { Database, JsonObject } from '../db/tables/index.js';
import { applyTransition } from './apply-transition.js';
import { lockAuthority, staleIncarnation, type Authority } from './attempt-authority.js';
import { planAttemptEnding, type AttemptEnding } from './attempt-ending.js';
import { projectJob } from './job-projection.js';
import type { ExecutionSettings } from './register-worker.js';
import { runWorkerOperation } from './worker-operation.js';

const MESSAGE_MAX = { progress: 1024, failure: 4096 } as const;

/**
 * Runs one attempt-scoped worker call in one transaction: a replayed
 * operation id answers first (see `runWorkerOperation`); otherwise the
 * call's authority is checked and the job row locked (`lockAuthority`:
 * STALE_INCARNATION, then STALE_AUTHORITY, leases by the database clock),
 * then `perform` runs and its response is recorded with its effect.
 */
async function underAuthority<Req extends DescMessage, Res extends DescMessage>(
  db: Kysely<Database>,
  subject: string,
  rpc: string,
  requestSchema: Req,
  request: MessageShape<Req> & { operationId: string; attempt?: AttemptRef | undefined },
  responseSchema: Res,
  perform: (authority: Authority, tx: Kysely<Database>, now: Date) => Promise<MessageShape<Res>>,
): Promise<MessageShape<Res>> {
  return db.transaction().execute(async (tx) => {
    const now = await transactionNow(tx);
    const incarnationId = request.attempt?.workerIncarnation ?? '';
    const incarnation = await readIncarnation(tx, subject, incarnationId);
    if (!incarnation) throw staleIncarnation();
    return runWorkerOperation(tx, { incarnation: incarnationId, operationId: request.operationId, rpc, requestSchema, request, responseSchema }, now, async () =>
      perform(await lockAuthority(tx, incarnation, request.attempt, now), tx, now),
    );
  });
}

/** RenewAttempt: extends a live lease (never revives one) and says what the owner asked for. */
export function renewAttempt(db: Kysely<Database>, settings: ExecutionSettings, subject: string, request: RenewAttemptRequest) {
  return underAuthority(db, subject, 'RenewAttempt', RenewAttemptRequestSchema, request, RenewAttemptResponseSchema, async ({ job }, tx, now) => {
    const leaseExpiresAt = new Date(now.getTime() + settings.leaseMs);
    await updateJob(tx, job.id, { lease_expires_at: leaseExpiresAt });
    return create(RenewAttemptResponseSchema, {
      leaseExpiresAt: timestampFromDate(leaseExpiresAt),
      cancelRequested: job.status === 'CANCELLING',
      pauseRequested: job.pause_requested,
    });
  });
}

/**
 * ReportProgress: stores the latest progress on the job (for the current
 * authority only; not a journal event, no revision change) and announces it
 * to live streams.
 */
export function reportProgress(db: Kysely<Database>, subject: string, request: ReportProgressRequest) {
  return underAuthority(db, subject, 'ReportProgress', ReportProgressRequestSchema, request, ReportProgressResponseSchema, async ({ job }, tx, now) => {
    const progress = request.progress;
    if (!progress || progress.completedUnits < 0n || progress.totalUnits < 0n) {
      throw invalidField('progress', 'must have non-negative completed_units and total_units');
    }
    if (progress.message.length > MESSAGE_MAX.progress) throw invalidField('progress.message', 'must be at most 1024 characters');
    const stored = {
      completed_units: progress.completedUnits.toString(),
      total_units: progress.totalUnits.toString(),
      message: progress.message,
      updated_at: now.toISOString(),
    };
    await updateJob(tx, job.id, { progress: stored });
    await announceProgress(tx, job, stored);
    return create(ReportProgressResponseSchema, { cancelRequested: job.status === 'CANCELLING', pauseRequested: job.pause_requested });
  });
}

/** SaveCheckpoint: stores the checkpoint for the next attempt and journals `checkpoint.saved`. */
export function saveCheckpoint(db: Kysely<Database>, subject: string, request: SaveCheckpointRequest) {
  return underAuthority(db, subject, 'SaveCheckpoint', SaveCheckpointRequestSchema, request, SaveCheckpointResponseSchema, async ({ job }, tx, now) => {
    const checkpoint = request.checkpoint ?? {};
    const bytes = checkedJsonBytes(checkpoint, 'checkpoint', 'checkpointBytes');
    await applyTransition(
      tx,
      job,
      { events: [attemptEvent(job, 'checkpoint.saved', { bytes })], patch: { checkpoint } },
      now,
    );
    return create(SaveCheckpointResponseSchema, {});
  });
}

/** AppendEvents: journals worker events (types under `worker.`) as the current attempt. */
export function appendEvents(db: Kysely<Database>, subject: string, request: AppendEventsRequest) {
  const events = request.events.map((event) => ({ type: event.type, payload: event.payload ?? {} }));
  validateEventBatch(events);
  events.forEach((event, index) => {
    if (!event.type.startsWith('worker.')) throw invalidField(`events[${index}].type`, 'must start with worker.');
  });
  return underAuthority(db, subject, 'AppendEvents', AppendEventsRequestSchema, request, AppendEventsResponseSchema, async ({ job }, tx, now) => {
    const applied = await applyTransition(
      tx,
      job,
      { events: events.map((event) => attemptEvent(job, event.type, event.payload)) },
      now,
    );
    return create(AppendEventsResponseSchema, { firstSequence: applied.firstSequence, lastSequence: applied.lastSequence });
  });
}

/** ReportOutcome: ends the attempt (see `planAttemptEnding`) and answers the job. */
export function reportOutcome(db: Kysely<Database>, subject: string, request: ReportOutcomeRequest) {
  const ending = endingOf(request);
  return underAuthority(db, subject, 'ReportOutcome', ReportOutcomeRequestSchema, request, ReportOutcomeResponseSchema, async ({ job }, tx, now) => {
    const planned = planAttemptEnding(job, ending, now);
    if (job.current_attempt_id) await endAttempt(tx, job.current_attempt_id, planned.attemptStatus, now);
    const applied = await applyTransition(tx, job, planned.transition, now);
    return create(ReportOutcomeResponseSchema, { job: projectJob(applied.job) });
  });
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

function attemptEvent(job: Authority['job'], type: string, payload: JsonObject) {
  return { type, payload, ...(job.current_attempt_id ? { attemptId: job.current_attempt_id } : {}), fence: BigInt(job.fence) };
}

function checkedJsonBytes(value: JsonObject, field: string, limit: 'checkpointBytes' | 'resultBytes' | 'eventPayloadBytes'): number {
  if (containsNul(value)) throw invalidField(field, 'must not contain the NUL character');
  const bytes = canonicalJsonByteLength(value);
  if (bytes > LIMITS[limit]) throw limitExceeded(limit, field);
  return bytes;
}

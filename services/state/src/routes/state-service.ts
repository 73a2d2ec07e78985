import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter, HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { drainSignalOf, statusOfFailure, writesEncodedFrames, type Logger, type SubmitOptions } from '@docket/service-kit';
import { invalidField, notFound } from '@docket/contracts';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { JobLifecycle, JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import {
  GetQueueResponseSchema,
  ExplainJobResponseSchema,
  ListWorkersResponseSchema,
  GetQueueStatsResponseSchema,
  SetQueuePolicyResponseSchema,
  ChangeJobResponseSchema,
  GetDeletionResponseSchema,
  MaintenanceTask,
  SetLegalHoldResponseSchema,
  SetRetentionPolicyResponseSchema,
  RunMaintenanceResponseSchema,
  GetJobResponseSchema,
  ListJobsResponseSchema,
  ReadJobChangesResponseSchema,
  ReadJobEventsResponseSchema,
  StateService,
  TransitionJobResponseSchema,
  WatchChangesResponseSchema,
  WatchJobResponseSchema,
  type AdmitJobRequest,
} from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { ChangeListenerHub } from '../db/change-listener.js';
import { withStatementBudget } from '../db/statement-budget.js';
import { translateDatabaseError } from '../db/database-errors.js';
import type { Database } from '../db/tables/index.js';
import type { BatchedWrites } from '../batched-writes.js';
import { changeJob } from '../owner-calls/change-job.js';
import { handleWorkerCall } from '../worker-calls/handle-worker-call.js';
import { handleOwnerCall } from '../owner-calls/owner-calls.js';
import { answerScheduleCall } from './schedule-calls.js';
import { answerBulkCall } from './bulk-calls.js';
import { answerAcceptRollback } from './accept-rollback.js';
import type { RollbackGuard } from '../failover/rollback-guard.js';
import { hardDeleteJob } from '../owner-calls/hard-delete-job.js';
import { findDeletion } from '../db/queries/deletions.js';
import { projectDeletion } from '../reads/deletion-projection.js';
import { setRetentionPolicy } from '../maintenance/retention.js';
import { parseQueuePolicyChange, readQueue, setQueuePolicy } from '../owner-calls/queue-policy.js';
import { setLegalHold } from '../owner-calls/legal-hold.js';
import type { ApprovalHistory } from '../db/approval-history.js';
import type { StateMetrics } from '../state-metrics.js';
import { runMaintenance } from '../maintenance/maintenance.js';
import type { QuarantineReport } from '../journal/job-quarantine.js';
import type { ExecutionSettings } from '../workers/register-worker.js';
import { readJobChanges } from '../feed/read-job-changes.js';
import { eventOf, readJobEvents } from '../journal/read-job-events.js';
import { encodeEvents, encodedJournalAnswer } from './event-encoding.js';
import { admitJobResponse, admitJobsResponse, encodedAdmitJobsAnswer, type AdmitJobItem } from './admission-answers.js';
import { encodedWorkerCallsAnswer, workerCallsResponse, type WorkerCallItem } from './worker-call-answers.js';
import { getJob, listJobs } from '../reads/read-jobs.js';
import { explainJob } from '../reads/explain-job.js';
import { listWorkers } from '../workers/list-workers.js';
import { parseQueueStatsRequest, readQueueStats } from '../reads/queue-stats.js';
import {
  parseAdmitJobRequest,
  parseChangeJobRequest,
  parseJobId,
  parseListJobsRequest,
  parseOwnerCall,
  adminOf,
  parseDeletionId,
  parseRetentionPolicy,
  parseReadJobChangesRequest,
  parseWatchChangesRequest,
  parseReadJobEventsRequest,
  parseTransitionJobRequest,
  viewerOf,
} from './state-requests.js';
import { transitionJob } from '../transitions/transition-job.js';
import { projectProgress } from '../reads/job-projection.js';
import { watchChangeTicks, watchJobSignals } from '../feed/watch-job.js';

/** What the StateService handlers need. */
export interface StateRoutesDependencies {
  readonly db: Kysely<Database>;
  /** The same database's pool, for the reads that run as named prepared statements. */
  readonly pool: pg.Pool;
  readonly writes: BatchedWrites;
  readonly changes: ChangeListenerHub;
  readonly execution: ExecutionSettings;
  readonly approvals: ApprovalHistory;
  readonly metrics: StateMetrics;
  readonly logger: Logger;
  /** Told of each job a background step or a claim quarantined. */
  readonly reportQuarantine: QuarantineReport;
  /** Notices a failover that lost acknowledged writes; AcceptRollback answers it. */
  readonly rollbackGuard: RollbackGuard;
}

/**
 * The caller's deadline for a group-committed write: an item still waiting
 * when it passes is never decided, and the batch's statements stop when
 * the last of its callers' deadlines passes (see `RequestBatcher`).
 */
function deadlineOf(ctx: HandlerContext): SubmitOptions {
  const timeoutMs = ctx.timeoutMs();
  return timeoutMs === undefined ? {} : { timeoutMs };
}

/** The most items one AdmitJobs or HandleWorkerCalls call carries (proto contract). */
export const MAX_BATCHED_CALLS = 256;

/** Registers docket.state.v1.StateService: validate, call the domain, answer. */
export function stateServiceRoutes(deps: StateRoutesDependencies): (router: ConnectRouter) => void {
  const admitted = (request: AdmitJobRequest, ctx: HandlerContext) => deps.writes.admissions.submit(parseAdmitJobRequest(request), deadlineOf(ctx));
  /** A failed item of a batched call: what the unary call would have answered (database errors translated first). */
  const itemStatus = (error: unknown, rpc: string) => statusOfFailure(translateDatabaseError(error), deps.logger, { rpc: `docket.state.v1.StateService/${rpc}` });
  return (router) => {
    router.service(StateService, withCallersBudget({
      admitJob: async (request, ctx) => admitJobResponse(await admitted(request, ctx)),
      async admitJobs(request, ctx) {
        if (request.requests.length > MAX_BATCHED_CALLS) throw invalidField('requests', `must hold at most ${MAX_BATCHED_CALLS} admissions`);
        const items = await Promise.all(
          request.requests.map((item) =>
            admitted(item, ctx).then(
              (outcome): AdmitJobItem => ({ admitted: outcome }),
              (error: unknown): AdmitJobItem => ({ error: itemStatus(error, 'AdmitJobs') }),
            ),
          ),
        );
        // Binary gRPC (the front services): each job goes as the bytes its batch already holds.
        return writesEncodedFrames(ctx) ? encodedAdmitJobsAnswer(items) : admitJobsResponse(items);
      },
      async getJob(request) {
        const found = await getJob(deps.db, viewerOf(request.caller), parseJobId(request.jobId));
        return create(GetJobResponseSchema, found);
      },
      async listJobs(request) {
        const page = await listJobs(deps.db, parseListJobsRequest(request));
        return create(ListJobsResponseSchema, page);
      },
      async transitionJob(request) {
        const outcome = await transitionJob(deps.db, parseTransitionJobRequest(request));
        return create(TransitionJobResponseSchema, outcome);
      },
      async readJobEvents(request, ctx) {
        const query = parseReadJobEventsRequest(request);
        const { rows, latestSequence, status, requestDigest } = await readJobEvents(deps.db, deps.approvals, query.viewer, query.jobId, query.afterSequence, query.pageSize);
        // Binary gRPC (the events service): the answer is written as one frame, the events straight into it.
        if (query.encoded && writesEncodedFrames(ctx)) return encodedJournalAnswer(rows, { latestSequence, status: JobStatus[status], requestDigest });
        const events = query.encoded ? { encodedEvents: encodeEvents(rows) } : { events: rows.map(eventOf) };
        return create(ReadJobEventsResponseSchema, { ...events, latestSequence, status: JobStatus[status], requestDigest });
      },
      async *watchJob(request, ctx) {
        const signals = watchJobSignals(deps.db, deps.changes, viewerOf(request.caller), parseJobId(request.jobId), untilDrainOrCancel(ctx));
        let last: { latestSequence: bigint; status: JobStatus } | undefined;
        for await (const signal of signals) {
          if ('head' in signal) {
            last = { latestSequence: signal.head.latestSequence, status: JobStatus[signal.head.status] };
            yield create(WatchJobResponseSchema, last);
          } else {
            yield create(WatchJobResponseSchema, { ...last, progress: projectProgress({ ...signal.progress }) });
          }
        }
      },
      async readJobChanges(request) {
        const query = parseReadJobChangesRequest(request);
        const batch = await readJobChanges(deps.db, query.viewer, query.after, query.filter, query.limit);
        return create(ReadJobChangesResponseSchema, {
          changes: batch.changes.map((change) => ({
            position: change.position,
            jobId: change.job_id,
            revision: change.revision,
            status: JobStatus[change.status],
            lifecycle: JobLifecycle[change.lifecycle],
            queue: change.queue,
            changedAt: timestampFromDate(change.changed_at),
            owner: change.owner,
          })),
          position: batch.position,
          heldBack: batch.heldBack,
        });
      },
      async *watchChanges(request, ctx) {
        const options = parseWatchChangesRequest(request);
        for await (const tick of watchChangeTicks(deps.changes, options, untilDrainOrCancel(ctx))) {
          yield create(WatchChangesResponseSchema, {
            claimableQueues: [...tick.claimableQueues],
            anyQueue: tick.anyQueue,
            jobSignals: [...tick.jobs].map(([jobId, signal]) => ({
              jobId,
              latestSequence: signal.latestSequence,
              status: JobStatus[signal.status],
              progress: signal.progress ? projectProgress({ ...signal.progress }) : undefined,
            })),
          });
        }
      },
      async changeJob(request) {
        const command = parseChangeJobRequest(request);
        if (command.action === 'HARD_DELETE') {
          const outcome = await hardDeleteJob(deps.db, command);
          return create(ChangeJobResponseSchema, {
            deletion: outcome.value,
            replayed: outcome.replayed,
            idempotencyExpiresAt: timestampFromDate(outcome.idempotencyExpiresAt),
          });
        }
        const outcome = await changeJob(deps.db, { ...command, action: command.action });
        return create(ChangeJobResponseSchema, {
          job: outcome.job,
          replayed: outcome.replayed,
          idempotencyExpiresAt: timestampFromDate(outcome.idempotencyExpiresAt),
        });
      },
      async getDeletion(request) {
        const deletion = await findDeletion(deps.db, viewerOf(request.caller), parseDeletionId(request.deletionId));
        if (!deletion) throw notFound('deletion');
        return create(GetDeletionResponseSchema, { deletion: projectDeletion(deletion) });
      },
      async setRetentionPolicy(request) {
        const policy = parseRetentionPolicy(request);
        const stored = await setRetentionPolicy(deps.db, policy.queue, policy.softDeleteAfterMs, policy.hardDeleteAfterMs);
        return create(SetRetentionPolicyResponseSchema, { response: { policy: stored } });
      },
      async setQueuePolicy(request) {
        adminOf(request.caller);
        const policy = await setQueuePolicy(deps.db, parseQueuePolicyChange(request.request));
        return create(SetQueuePolicyResponseSchema, { response: { policy } });
      },
      async getQueue(request) {
        adminOf(request.caller);
        return create(GetQueueResponseSchema, { response: await readQueue(deps.db, request.request?.queue ?? '') });
      },
      async explainJob(request) {
        const { response, feedPosition } = await explainJob(deps.pool, viewerOf(request.caller), parseJobId(request.jobId), deps.execution.leaseMs);
        return create(ExplainJobResponseSchema, { response, feedPosition });
      },
      async getQueueStats(request) {
        adminOf(request.caller);
        return create(GetQueueStatsResponseSchema, { response: await readQueueStats(deps.db, parseQueueStatsRequest(request.request)) });
      },
      async listWorkers(request) {
        adminOf(request.caller);
        return create(ListWorkersResponseSchema, await listWorkers(deps.db, request, deps.execution.leaseMs));
      },
      async setLegalHold(request) {
        const viewer = adminOf(request.caller);
        const job = await setLegalHold(deps.db, viewer, parseJobId(request.request?.jobId ?? ''), request.request?.held === true);
        return create(SetLegalHoldResponseSchema, { response: { job } });
      },
      async handleOwnerCall(request) {
        return handleOwnerCall(deps, parseOwnerCall(request));
      },
      async handleScheduleCall(request) {
        return answerScheduleCall(deps.db, request);
      },
      async handleBulkCall(request) {
        return answerBulkCall(deps.db, request);
      },
      async handleWorkerCall(request, ctx) {
        return handleWorkerCall(deps.db, deps.writes, deps.execution, request, deadlineOf(ctx));
      },
      async handleWorkerCalls(request, ctx) {
        if (request.calls.length > MAX_BATCHED_CALLS) throw invalidField('calls', `must hold at most ${MAX_BATCHED_CALLS} calls`);
        const items = await Promise.all(
          request.calls.map((call) =>
            handleWorkerCall(deps.db, deps.writes, deps.execution, call, deadlineOf(ctx)).then(
              (answered): WorkerCallItem => ({ answered }),
              (error: unknown): WorkerCallItem => ({ error: itemStatus(error, 'HandleWorkerCalls') }),
            ),
          ),
        );
        // Binary gRPC (the execution service): each response goes as the bytes its operation record holds.
        return writesEncodedFrames(ctx) ? encodedWorkerCallsAnswer(items) : workerCallsResponse(items);
      },
      async runMaintenance(request) {
        const step = await runMaintenance(deps, request);
        deps.metrics.countMaintenance(MaintenanceTask[request.task] ?? 'UNKNOWN', step.handled);
        return create(RunMaintenanceResponseSchema, {
          handled: step.handled,
          nextDueAt: step.nextDueAt ? timestampFromDate(step.nextDueAt) : undefined,
        });
      },
      async acceptRollback(request) {
        return answerAcceptRollback(deps.rollbackGuard, deps.pool, request);
      },
    }));
  };
}

/**
 * Live streams end when the caller goes away or when this server starts
 * draining: they return normally, so the caller sees the stream end and
 * reconnects (to another replica, or this one restarted) at once instead
 * of waiting out the grace period.
 */
function untilDrainOrCancel(ctx: HandlerContext): AbortSignal {
  return AbortSignal.any([ctx.signal, drainSignalOf(ctx)]);
}

/**
 * The implementation with each unary handler run within its caller's
 * deadline as the statement budget (`withStatementBudget`): a transaction
 * it opens stops its statements when the caller has stopped waiting, and
 * the caller hears DEADLINE_EXCEEDED in time. Streams pass unchanged.
 */
function withCallersBudget(impl: ServiceImpl<typeof StateService>): ServiceImpl<typeof StateService> {
  const budgeted: Record<string, unknown> = {};
  for (const [name, handler] of Object.entries(impl) as [keyof typeof StateService.method, (request: unknown, ctx: HandlerContext) => unknown][]) {
    budgeted[name] =
      StateService.method[name].methodKind === 'unary'
        ? (request: unknown, ctx: HandlerContext) => withStatementBudget(ctx.timeoutMs(), async () => handler(request, ctx))
        : handler;
  }
  return budgeted as ServiceImpl<typeof StateService>;
}

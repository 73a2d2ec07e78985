import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import { newId } from '@docket/contracts';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type {
  Assignment,
  ReportOutcomeRequest,
  ReportOutcomeRequestSchema,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { JobAbortedError, type AbortKind } from './abort-reason.js';
import { callWithRetry, type RetrySchedule } from './call-retry.js';
import { DocketWorkerError } from './docket-worker-error.js';
import type { ExecutionClient } from './execution-client.js';
import type { JobContext, JobHandler, JobResult } from './job-context.js';
import { toJsonObject } from './json-object.js';
import { linkedSignal } from './linked-signal.js';
import { planOutcome, type DescribeError, type HandlerSettlement, type OutcomePlan } from './outcome-plan.js';
import type { WorkerLogger } from './worker-logger.js';
import type { WorkerStats } from './worker-stats.js';

/** What an attempt needs from its worker. */
export interface AttemptEnvironment {
  readonly client: ExecutionClient;
  readonly handler: JobHandler;
  readonly logger: WorkerLogger;
  /** The registered lease duration. */
  readonly leaseMs: number;
  /** How long after a claim or a successful renewal the next renewal starts. */
  readonly renewIntervalMs: number;
  /** Deadline of each try of each call. */
  readonly callTimeoutMs: number;
  readonly describeError: DescribeError | undefined;
  /** Counters shared by every attempt of the worker. */
  readonly stats: WorkerStats;
  /** Aborts when the worker has stopped for good: retries end, helpers refuse. */
  readonly closed: AbortSignal;
  /** Called when the service says this incarnation was superseded. */
  onIncarnationStale(): void;
}

/** Retries of the job helpers (progress, checkpoint, events): about 8 s at most. */
const HELPER_RETRIES: RetrySchedule = { tries: 8, initialDelayMs: 100, maxDelayMs: 2_000 };

/** Retries of ReportOutcome: longer, since a lost outcome costs the whole attempt. Replays answer after the lease is gone. */
const OUTCOME_RETRIES: RetrySchedule = { tries: 12, initialDelayMs: 200, maxDelayMs: 5_000 };

/** Retries of one renewal: until the lease would have expired. */
const RENEW_RETRIES: RetrySchedule = { tries: Infinity, initialDelayMs: 50, maxDelayMs: 1_000 };

/** Precedence of stop requests: the strongest one seen decides the outcome. */
const STRENGTH: Readonly<Record<AbortKind, number>> = { shutdown: 1, pause: 2, cancel: 3, lost: 4 };


/**
 * One claimed attempt from its assignment to its outcome. From the claim on
 * it renews the lease on a timer (one per attempt), also while it waits in
 * the prefetch buffer and while its outcome waits for a report slot, until
 * the report is sent; it turns cancel/pause/lost into an abort of the job's
 * signal. `runHandler` runs the handler with a {@link JobContext} and plans
 * the outcome (`planOutcome`); `conclude` reports it. Its worker's
 * {@link AttemptPipeline} decides when each step runs.
 */
export class AttemptRun {
  readonly jobId: string;
  readonly attemptId: string;
  readonly fence: bigint;
  private readonly env: AttemptEnvironment;
  private readonly assignment: Assignment;
  private readonly controller = new AbortController();
  /** Aborts when the lease no longer needs renewing (the report is being sent, or the attempt is lost). */
  private readonly renewalStop = new AbortController();
  /** Whether the handler has started, and whether it has settled (the job helpers refuse from then on). */
  private handlerState: 'waiting' | 'running' | 'settled' = 'waiting';
  private strongest: AbortKind | undefined;
  /** `Date.now()` by which the lease has surely expired unless renewed (the send time of the last successful claim/renewal plus the lease). */
  private leaseDeadline: number;
  private renewTimer: NodeJS.Timeout | undefined;
  private checkpoint: JsonObject | undefined;

  constructor(assignment: Assignment, env: AttemptEnvironment, claimedAt: number) {
    const envelope = assignment.envelope;
    const authority = assignment.authority;
    if (!envelope || !authority) throw new Error('assignment without envelope or authority');
    this.assignment = assignment;
    this.env = env;
    this.jobId = envelope.jobId;
    this.attemptId = authority.attemptId;
    this.fence = authority.fence;
    this.checkpoint = envelope.checkpoint;
    this.leaseDeadline = claimedAt + env.leaseMs;
  }

  /** The stop request that decides the outcome, if any. */
  get stopKind(): AbortKind | undefined {
    return this.strongest;
  }

  /** The job's signal: aborts on the first stop request (see {@link AbortKind}). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * Asks the handler to stop: aborts the job's signal (with the first
   * kind; later, stronger kinds only change the reported outcome).
   */
  requestStop(kind: AbortKind): void {
    if (this.strongest !== undefined && STRENGTH[this.strongest] >= STRENGTH[kind]) return;
    this.strongest = kind;
    if (!this.controller.signal.aborted) this.controller.abort(new JobAbortedError(kind));
    if (kind === 'lost') this.stopRenewing();
  }

  /** Logs the claim and starts renewing the lease, which runs from the claim whether or not the handler has started. */
  keepLeaseAlive(): void {
    const envelope = this.assignment.envelope!;
    this.env.logger.info(
      `claimed ${this.jobId} (attempt ${envelope.attemptNumber}, fence ${this.fence}${envelope.checkpoint ? ', from its checkpoint' : ''})`,
      { event: 'attempt.claimed', jobId: this.jobId, attemptId: this.attemptId, fence: this.fence, attemptNumber: envelope.attemptNumber, queue: envelope.queue },
    );
    this.scheduleRenewal(true);
  }

  /** Runs the handler and plans what to report; the lease stays renewed until `conclude`. Never rejects. */
  async runHandler(): Promise<OutcomePlan> {
    this.handlerState = 'running';
    let settlement: HandlerSettlement;
    try {
      const value: unknown = await Promise.resolve().then(() => this.env.handler(this.context()));
      settlement = { status: 'returned', value };
    } catch (error) {
      settlement = { status: 'threw', error };
    }
    this.handlerState = 'settled';
    const plan = planOutcome(settlement, this.strongest, this.env.describeError);
    if (plan.kind === 'failure' && plan.unexpected && settlement.status === 'threw') {
      this.env.logger.warn(`${this.jobId}: the handler threw; reporting INTERNAL without its text`, {
        event: 'attempt.handler_error', jobId: this.jobId, attemptId: this.attemptId, error: settlement.error,
      });
    }
    return plan;
  }

  /**
   * Stops renewing and reports `plan`, unless the attempt was lost
   * meanwhile or the worker has stopped (then it only logs why nothing is
   * reported). Never rejects.
   */
  async conclude(plan: OutcomePlan): Promise<void> {
    this.stopRenewing();
    const outcome = this.strongest === 'lost' ? ({ kind: 'none', why: 'lost' } as const) : plan;
    if (outcome.kind === 'none') {
      const abandoned = `${this.jobId} abandoned at shutdown${this.handlerState === 'waiting' ? ' before it started' : ''} (settled when its lease expires)`;
      this.env.logger.info(
        outcome.why === 'lost' ? `${this.jobId} lost (attempt ${this.attemptId} no longer holds the job)` : abandoned,
        { event: outcome.why === 'lost' ? 'attempt.lost' : 'attempt.abandoned', jobId: this.jobId, attemptId: this.attemptId, fence: this.fence },
      );
      return;
    }
    if (this.env.closed.aborted) {
      this.env.logger.warn(`${this.jobId}: the attempt ended after the worker stopped; its ${outcome.kind} outcome is not reported`, {
        event: 'attempt.abandoned', jobId: this.jobId, attemptId: this.attemptId, outcome: outcome.kind,
      });
      return;
    }
    await this.report(outcome, false);
  }

  private context(): JobContext {
    const envelope = this.assignment.envelope!;
    const run = this;
    const input = envelope.input ?? {};
    return Object.freeze({
      jobId: envelope.jobId,
      attemptId: envelope.attemptId,
      fence: envelope.fence,
      attemptNumber: envelope.attemptNumber,
      queue: envelope.queue,
      input,
      get checkpoint() {
        return run.checkpoint;
      },
      signal: this.controller.signal,
      progress: (completed: number, total?: number, message?: string) => this.progress(completed, total, message),
      saveCheckpoint: (value: JobResult) => this.saveCheckpoint(value),
      emit: (type: `worker.${string}`, payload?: JobResult) => this.emit(type, payload),
    });
  }

  private get ref() {
    return { attemptId: this.attemptId, fence: this.fence, workerIncarnation: this.assignment.authority!.workerIncarnation };
  }

  private async progress(completed: number, total = 0, message = ''): Promise<void> {
    for (const [name, value] of [['completed', completed], ['total', total]] as const) {
      if (!Number.isSafeInteger(value) || value < 0) {
        throw DocketWorkerError.local('INVALID_OPTION', `progress ${name} must be a non-negative integer`);
      }
    }
    const response = await this.attemptCall('ReportProgress', (operationId) =>
      this.env.client.reportProgress(
        { attempt: this.ref, operationId, progress: { completedUnits: BigInt(completed), totalUnits: BigInt(total), message } },
        { timeoutMs: this.env.callTimeoutMs },
      ),
    );
    this.noteRequests(response.cancelRequested, response.pauseRequested);
  }

  private async saveCheckpoint(value: JobResult): Promise<void> {
    const checkpoint = toJsonObject(value, 'the checkpoint');
    await this.attemptCall('SaveCheckpoint', (operationId) =>
      this.env.client.saveCheckpoint({ attempt: this.ref, operationId, checkpoint }, { timeoutMs: this.env.callTimeoutMs }),
    );
    this.checkpoint = checkpoint;
  }

  private async emit(type: string, payload: JobResult = {}): Promise<bigint> {
    if (typeof type !== 'string' || !type.startsWith('worker.')) {
      throw DocketWorkerError.local('INVALID_OPTION', 'event types must start with "worker."');
    }
    const body = toJsonObject(payload, 'the event payload');
    const response = await this.attemptCall('AppendEvents', (operationId) =>
      this.env.client.appendEvents({ attempt: this.ref, operationId, events: [{ type, payload: body }] }, { timeoutMs: this.env.callTimeoutMs }),
    );
    return response.firstSequence;
  }

  /** One helper call under the attempt's authority, with a fresh operation id kept across retries. */
  private async attemptCall<T>(rpc: string, send: (operationId: string) => Promise<T>): Promise<T> {
    if (this.handlerState === 'settled') throw DocketWorkerError.local('ATTEMPT_ENDED', `${rpc} after the handler settled`);
    if (this.strongest === 'lost') throw DocketWorkerError.local('ATTEMPT_ENDED', `${rpc} after the attempt lost its authority`);
    if (this.env.closed.aborted) throw DocketWorkerError.local('ATTEMPT_ENDED', `${rpc} after the worker stopped`);
    const operationId = newId('op');
    try {
      return await callWithRetry(() => send(operationId), {
        schedule: HELPER_RETRIES,
        signal: this.env.closed,
        onRetry: (error, tryNumber, backoffMs) => this.logRetry(rpc, error, tryNumber, backoffMs),
      });
    } catch (error) {
      const failure = DocketWorkerError.fromCall(rpc, error);
      this.onRefusal(failure);
      throw failure;
    }
  }

  /** STALE_AUTHORITY / STALE_INCARNATION mean the attempt is gone: stop the handler quietly. */
  private onRefusal(failure: DocketWorkerError): void {
    if (failure.reason === 'STALE_AUTHORITY') this.requestStop('lost');
    if (failure.reason === 'STALE_INCARNATION') {
      this.requestStop('lost');
      this.env.onIncarnationStale();
    }
  }

  private noteRequests(cancelRequested: boolean, pauseRequested: boolean): void {
    if (cancelRequested) this.requestStop('cancel');
    else if (pauseRequested) this.requestStop('pause');
  }

  /**
   * Arms the next renewal `renewIntervalMs` from now. The first one comes up
   * to a quarter earlier, at random, so that attempts claimed together (one
   * ClaimJobs returns up to 100) do not renew in lockstep forever; later
   * ones follow each completed renewal, which keeps them spread.
   */
  private scheduleRenewal(first = false): void {
    if (this.renewalStop.signal.aborted) return;
    const interval = first ? this.env.renewIntervalMs * (1 - Math.random() / 4) : this.env.renewIntervalMs;
    this.renewTimer = setTimeout(() => void this.renew(), interval);
  }

  private stopRenewing(): void {
    if (this.renewTimer) clearTimeout(this.renewTimer);
    this.renewTimer = undefined;
    if (!this.renewalStop.signal.aborted) this.renewalStop.abort();
  }

  /**
   * One renewal: a fresh operation id, retried with it until the lease
   * would have expired by the local, conservative deadline. Success moves
   * the deadline to the successful try's send time plus the lease; any
   * refusal, or no answer before the deadline, means the lease is lost.
   */
  private async renew(): Promise<void> {
    if (this.renewalStop.signal.aborted) return;
    const operationId = newId('op');
    const started = performance.now();
    let sentAt = Date.now();
    try {
      const response = await callWithRetry(
        () => {
          sentAt = Date.now();
          const remaining = Math.max(1, this.leaseDeadline - sentAt);
          const linked = linkedSignal(this.renewalStop.signal);
          return this.env.client
            .renewAttempt({ attempt: this.ref, operationId }, { timeoutMs: Math.min(this.env.callTimeoutMs, remaining), signal: linked.signal })
            .finally(linked.dispose);
        },
        {
          schedule: RENEW_RETRIES,
          signal: this.renewalStop.signal,
          deadline: this.leaseDeadline,
          onRetry: (error, tryNumber, backoffMs) => {
            this.env.stats.renewalRetries++;
            this.logRetry('RenewAttempt', error, tryNumber, backoffMs);
          },
        },
      );
      this.env.stats.renewals++;
      this.env.stats.renewalLatencyMs += performance.now() - started;
      this.leaseDeadline = sentAt + this.env.leaseMs;
      this.noteRequests(response.cancelRequested, response.pauseRequested);
      this.scheduleRenewal();
    } catch (error) {
      if (this.renewalStop.signal.aborted) return;
      const failure = DocketWorkerError.fromCall('RenewAttempt', error);
      this.env.logger.warn(`${this.jobId}: renewal failed (${failure.reason ?? failure.code}); the lease is lost`, {
        event: 'attempt.renewal_failed', jobId: this.jobId, attemptId: this.attemptId, code: failure.code, reason: failure.reason,
      });
      this.onRefusal(failure);
      this.requestStop('lost');
    }
  }

  /**
   * Reports `plan` with one operation id, retried while the outcome may
   * have been applied (a replay answers with the original job even after
   * the lease is gone). A success or failure the service refuses as
   * INVALID_ARGUMENT (a result or details over a limit) is replaced, once,
   * by an INTERNAL failure that names the reason, so the attempt still ends.
   */
  private async report(plan: Exclude<OutcomePlan, { kind: 'none' }>, fallback: boolean): Promise<void> {
    const request: MessageInitShape<typeof ReportOutcomeRequestSchema> = { attempt: this.ref, operationId: newId('op'), outcome: outcomeOf(plan) };
    try {
      const response = await callWithRetry(() => this.env.client.reportOutcome(request, { timeoutMs: this.env.callTimeoutMs }), {
        schedule: OUTCOME_RETRIES,
        signal: this.env.closed,
        onRetry: (error, tryNumber, backoffMs) => this.logRetry('ReportOutcome', error, tryNumber, backoffMs),
      });
      const status = response.job ? JobStatus[response.job.status] : 'unknown';
      this.env.logger.info(`${this.jobId} ${describePlan(plan)} -> ${status}`, {
        event: 'attempt.reported', jobId: this.jobId, attemptId: this.attemptId, fence: this.fence, outcome: plan.kind,
        ...(plan.kind === 'failure' ? { failureClass: plan.failureClass } : {}), status,
      });
    } catch (error) {
      const failure = DocketWorkerError.fromCall('ReportOutcome', error);
      this.onRefusal(failure);
      const fields = { jobId: this.jobId, attemptId: this.attemptId, fence: this.fence, outcome: plan.kind, code: failure.code, reason: failure.reason };
      if (failure.reason === 'STALE_AUTHORITY' || failure.reason === 'STALE_INCARNATION') {
        this.env.logger.info(`${this.jobId} lost before its outcome was recorded (${failure.reason})`, { event: 'attempt.lost', ...fields });
      } else if (!fallback && failure.code === 3 /* INVALID_ARGUMENT */ && (plan.kind === 'success' || plan.kind === 'failure')) {
        this.env.logger.warn(`${this.jobId}: the service refused the ${plan.kind} outcome (${failure.reason ?? 'INVALID_ARGUMENT'}); reporting INTERNAL`, { event: 'attempt.outcome_refused', ...fields });
        await this.report(
          { kind: 'failure', failureClass: 'INTERNAL', message: `the service refused the worker's ${plan.kind} outcome (${failure.reason ?? 'INVALID_ARGUMENT'})`, safeDetails: undefined, unexpected: false },
          true,
        );
      } else {
        this.env.logger.error(`${this.jobId}: could not report the ${plan.kind} outcome (${failure.reason ?? failure.code})`, { event: 'attempt.report_failed', ...fields });
      }
    }
  }

  private logRetry(rpc: string, error: unknown, tryNumber: number, backoffMs: number): void {
    const failure = DocketWorkerError.fromCall(rpc, error);
    this.env.logger.warn(`${this.jobId}: ${rpc} try ${tryNumber} failed (${failure.reason ?? failure.code}); retrying with the same operation id`, {
      event: 'call.retry', rpc, jobId: this.jobId, code: failure.code, reason: failure.reason, backoffMs: Math.round(backoffMs),
    });
  }
}

function outcomeOf(plan: Exclude<OutcomePlan, { kind: 'none' }>): ReportOutcomeRequest['outcome'] {
  switch (plan.kind) {
    case 'success':
      return { case: 'success', value: { $typeName: 'docket.execution.v1.SuccessOutcome', result: plan.result } };
    case 'failure':
      return {
        case: 'failure',
        value: {
          $typeName: 'docket.execution.v1.FailureOutcome',
          failureClass: FailureClass[plan.failureClass],
          message: plan.message,
          ...(plan.safeDetails ? { safeDetails: plan.safeDetails } : {}),
        },
      };
    case 'cancelled':
      return { case: 'cancelled', value: { $typeName: 'docket.execution.v1.CancelledOutcome' } };
    case 'paused':
      return { case: 'paused', value: { $typeName: 'docket.execution.v1.PausedOutcome' } };
  }
}

function describePlan(plan: Exclude<OutcomePlan, { kind: 'none' }>): string {
  switch (plan.kind) {
    case 'success':
      return 'succeeded';
    case 'failure':
      return `failed (${plan.failureClass})`;
    case 'cancelled':
      return 'cancelled';
    case 'paused':
      return 'paused';
  }
}

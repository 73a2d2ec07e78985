import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { callWithRetry, type RetrySchedule } from '@docket/client-kit';
import { LIMITS, newId, type EffectTransition } from '@docket/contracts';
import { ApprovalDecision, type DecidedApproval } from '@docket/proto/docket/common/v1/approval_pb.js';
import { EffectDisposition, EffectRecoveryReason, type Effect } from '@docket/proto/docket/common/v1/effect_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type {
  AdvanceEffectRequestSchema,
  Assignment,
  ReportOutcomeRequest,
  ReportOutcomeRequestSchema,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { JobAbortedError, type AbortKind } from './abort-reason.js';
import { DocketWorkerError } from './docket-worker-error.js';
import { effectRecordOf, type EffectRecord } from './effect-record.js';
import { runEffect, type EffectJournal, type EffectResult, type EffectSteps } from './effect-runner.js';
import type { ExecutionClient } from './execution-client.js';
import type { ApprovalRequested, JobContext, JobHandler, JobResult, LastApproval } from './job-context.js';
import { toJsonObject } from './json-object.js';
import { linkedSignal } from './linked-signal.js';
import { planOutcome, type DescribeError, type HandlerSettlement, type OutcomePlan } from './outcome-plan.js';
import { SignalInbox, jobSignalOf } from './signal-inbox.js';
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
  /** How often to renew while the handler waits on `job.signals`. */
  readonly signalPollMs: number;
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

/**
 * Retries of ReportOutcome and RequestApproval, which each end the attempt:
 * with the same operation id for as long as the lease allows and at least
 * {@link OUTCOME_PATIENCE_MS} (a replay answers even after the lease is
 * gone, and an outcome given up on makes the job run again), until the
 * worker stops for good.
 */
const OUTCOME_RETRIES: RetrySchedule = { tries: Infinity, initialDelayMs: 200, maxDelayMs: 5_000 };

/** How long an outcome is retried at least, however short the lease: longer than a Postgres restart or a failover. */
const OUTCOME_PATIENCE_MS = 60_000;

/** Retries of one renewal: until the lease would have expired. */
const RENEW_RETRIES: RetrySchedule = { tries: Infinity, initialDelayMs: 50, maxDelayMs: 1_000 };

/** Precedence of stop requests: the strongest one seen decides the outcome. A recorded approval request ends the attempt for good. */
const STRENGTH: Readonly<Record<AbortKind, number>> = { shutdown: 1, pause: 2, cancel: 3, lost: 4, approval: 5 };

/** The most recoverable effects one ListRecoverableEffects returns. */
const RECOVERABLE_EFFECTS_MAX: number = LIMITS.recoverableEffectsPage;

/** The longest approval prompt, in characters. */
const APPROVAL_PROMPT_MAX: number = LIMITS.approvalPromptLength;


/**
 * One claimed attempt from its assignment to its outcome. From the claim on
 * it renews the lease on a timer (one per attempt), also while it waits in
 * the prefetch buffer and while its outcome waits for a report slot, until
 * the report is sent; it turns cancel/pause/lost into an abort of the job's
 * signal, and hands the signals of the claim and of every renewal to the
 * job's {@link SignalInbox} (renewing every `signalPollMs` while the
 * handler waits on it). `runHandler` runs the handler with a
 * {@link JobContext} and plans the outcome (`planOutcome`); `conclude`
 * reports it. A recorded approval request ends the attempt early: no more
 * renewals, nothing reported. Its worker's {@link AttemptPipeline} decides
 * when each step runs.
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
  /** `Date.now()` at which the armed renewal fires. */
  private renewDueAt = 0;
  /** Whether a renewal is in flight (its retries included). */
  private renewing = false;
  private checkpoint: JsonObject | undefined;
  private readonly inbox: SignalInbox;
  /**
   * While a RequestApproval is in flight: resolves with whether it was
   * recorded. A STALE_AUTHORITY seen meanwhile is judged only then, since a
   * recorded request is what ended the authority.
   */
  private approvalInFlight: Promise<boolean> | undefined;

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
    this.inbox = new SignalInbox({
      acknowledge: (upTo) => this.acknowledgeSignals(upTo),
      onWaiting: (waiting) => {
        if (waiting) this.pollSoon();
      },
    });
    this.inbox.deliver(envelope.pendingSignals.map(jobSignalOf));
    this.controller.signal.addEventListener('abort', () => this.inbox.end(), { once: true });
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
    this.inbox.end();
    await this.inbox.flush(); // before the outcome ends the attempt: no acknowledgement is accepted after it
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
    const outcome =
      this.strongest === 'lost' || this.strongest === 'approval' ? ({ kind: 'none', why: this.strongest } as const) : plan;
    if (outcome.kind === 'none' && outcome.why === 'approval') {
      this.env.logger.debug?.(`${this.jobId}: the handler ended after its approval request; nothing to report`, {
        event: 'attempt.ended_for_approval', jobId: this.jobId, attemptId: this.attemptId,
      });
      return;
    }
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
      requestApproval: (prompt: string, details?: JobResult) => this.requestApproval(prompt, details),
      lastApproval: lastApprovalOf(envelope.lastApproval),
      parentResults: envelope.parentResults,
      parentResultsTruncated: envelope.parentResultsTruncated,
      signals: this.inbox,
      effect: (kind: string, key: string, input: JobResult, steps: EffectSteps) => this.effect(kind, key, input, steps),
      recoverableEffects: (limit?: number) => this.recoverableEffects(limit),
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

  /**
   * Asks for approval and ends the attempt once the request is recorded
   * (see `JobContext.requestApproval`). Signals the handler took are
   * acknowledged first: no acknowledgement is accepted after the request.
   * Retried like an outcome, since it ends the attempt too.
   */
  private async requestApproval(prompt: string, details?: JobResult): Promise<ApprovalRequested> {
    const length = typeof prompt === 'string' ? [...prompt].length : 0;
    if (length < 1 || length > APPROVAL_PROMPT_MAX) {
      throw DocketWorkerError.local('INVALID_OPTION', `the approval prompt must be 1 to ${APPROVAL_PROMPT_MAX} characters`);
    }
    const body = details === undefined ? undefined : toJsonObject(details, 'the approval details');
    this.assertUsable('RequestApproval');
    if (this.approvalInFlight) throw DocketWorkerError.local('INVALID_OPTION', 'requestApproval is already in progress for this attempt');
    let settle!: (recorded: boolean) => void;
    this.approvalInFlight = new Promise((resolve) => (settle = resolve));
    try {
      await this.inbox.flush();
      const response = await this.callUnderAuthority(
        'RequestApproval',
        (operationId) =>
          this.env.client.requestApproval(
            { attempt: this.ref, operationId, prompt, ...(body ? { details: body } : {}) },
            { timeoutMs: this.env.callTimeoutMs },
          ),
        OUTCOME_RETRIES,
        this.outcomeDeadline(),
      );
      this.endForApproval(response.approvalId);
      settle(true);
      return Object.freeze({ approvalId: response.approvalId });
    } catch (error) {
      this.approvalInFlight = undefined;
      settle(false);
      throw error;
    }
  }

  /** The recorded approval request ended the attempt: stop renewing, stop the handler, end its signals. */
  private endForApproval(approvalId: string): void {
    this.strongest = 'approval';
    this.stopRenewing();
    if (!this.controller.signal.aborted) this.controller.abort(new JobAbortedError('approval'));
    this.inbox.end();
    this.env.logger.info(`${this.jobId} waiting for approval ${approvalId} (attempt ${this.attemptId} ended; the job is PAUSED)`, {
      event: 'attempt.approval_requested', jobId: this.jobId, attemptId: this.attemptId, fence: this.fence, approvalId,
    });
  }

  /** AckSignals for the inbox; rejects (so the inbox tries again later) when it did not land. */
  private async acknowledgeSignals(upTo: bigint): Promise<void> {
    if (this.strongest === 'lost' || this.strongest === 'approval' || this.env.closed.aborted) {
      throw DocketWorkerError.local('ATTEMPT_ENDED', 'AckSignals after the attempt ended');
    }
    try {
      await this.callUnderAuthority('AckSignals', (operationId) =>
        this.env.client.ackSignals({ attempt: this.ref, operationId, upToSequence: upTo }, { timeoutMs: this.env.callTimeoutMs }),
      );
    } catch (error) {
      const failure = DocketWorkerError.fromCall('AckSignals', error);
      this.env.logger.warn(`${this.jobId}: acknowledging signals up to ${upTo} failed (${failure.reason ?? failure.code}); tried again with the next signal taken`, {
        event: 'signals.ack_failed', jobId: this.jobId, attemptId: this.attemptId, upTo, code: failure.code, reason: failure.reason,
      });
      throw failure;
    }
  }

  private effect(kind: string, key: string, input: JobResult, steps: EffectSteps): Promise<EffectResult> {
    return runEffect(this.effectJournal(), { kind, key, input }, steps, this.controller.signal, { logger: this.env.logger, jobId: this.jobId });
  }

  /** The effect-journal RPCs under this attempt's authority, for `runEffect`. */
  private effectJournal(): EffectJournal {
    const recordOf = (rpc: string, effect: Effect | undefined): EffectRecord => {
      if (!effect) throw new DocketWorkerError(13 /* INTERNAL */, undefined, `${rpc} returned no effect`);
      return effectRecordOf(effect);
    };
    return {
      begin: async (kind, key, inputDigest) => {
        const response = await this.attemptCall('BeginEffect', (operationId) =>
          this.env.client.beginEffect({ attempt: this.ref, operationId, kind, idempotencyKey: key, inputDigest }, { timeoutMs: this.env.callTimeoutMs }),
        );
        return { record: recordOf('BeginEffect', response.effect), created: response.disposition === EffectDisposition.CREATED };
      },
      advance: async (record, transition) => {
        const response = await this.attemptCall('AdvanceEffect', (operationId) =>
          this.env.client.advanceEffect(
            { attempt: this.ref, operationId, effectId: record.effectId, expectedRevision: record.revision, transition: transitionOf(transition) },
            { timeoutMs: this.env.callTimeoutMs },
          ),
        );
        return recordOf('AdvanceEffect', response.effect);
      },
    };
  }

  private async recoverableEffects(limit = RECOVERABLE_EFFECTS_MAX): Promise<readonly EffectRecord[]> {
    if (!Number.isInteger(limit) || limit < 1 || limit > RECOVERABLE_EFFECTS_MAX) {
      throw DocketWorkerError.local('INVALID_OPTION', `limit must be an integer from 1 to ${RECOVERABLE_EFFECTS_MAX}`);
    }
    const response = await this.attemptCall('ListRecoverableEffects', () =>
      this.env.client.listRecoverableEffects({ attempt: this.ref, limit }, { timeoutMs: this.env.callTimeoutMs }),
    );
    return Object.freeze(response.effects.map(effectRecordOf));
  }

  /** Refuses a helper call once the handler settled, the attempt ended or the worker stopped. */
  private assertUsable(rpc: string): void {
    if (this.handlerState === 'settled') throw DocketWorkerError.local('ATTEMPT_ENDED', `${rpc} after the handler settled`);
    if (this.strongest === 'lost') throw DocketWorkerError.local('ATTEMPT_ENDED', `${rpc} after the attempt lost its authority`);
    if (this.strongest === 'approval') throw DocketWorkerError.local('ATTEMPT_ENDED', `${rpc} after the attempt ended for approval`);
    if (this.env.closed.aborted) throw DocketWorkerError.local('ATTEMPT_ENDED', `${rpc} after the worker stopped`);
  }

  /** Until when an outcome (or an approval request) is retried: see {@link OUTCOME_RETRIES}. */
  private outcomeDeadline(): number {
    return Math.max(this.leaseDeadline, Date.now() + OUTCOME_PATIENCE_MS);
  }

  /** One helper call under the attempt's authority, with a fresh operation id kept across retries. */
  private async attemptCall<T>(rpc: string, send: (operationId: string) => Promise<T>): Promise<T> {
    this.assertUsable(rpc);
    return this.callUnderAuthority(rpc, send);
  }

  /** Sends `rpc` with a fresh operation id, retried with it while the call may have been applied; a refusal ends the attempt when it says so. */
  private async callUnderAuthority<T>(rpc: string, send: (operationId: string) => Promise<T>, schedule = HELPER_RETRIES, deadline?: number): Promise<T> {
    const operationId = newId('op');
    try {
      return await callWithRetry(() => send(operationId), {
        schedule,
        scope: 'possibly-applied',
        signal: this.env.closed,
        deadline,
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
    if (failure.reason === 'STALE_AUTHORITY') this.noteStaleAuthority();
    if (failure.reason === 'STALE_INCARNATION') {
      this.requestStop('lost');
      this.env.onIncarnationStale();
    }
  }

  /** The attempt is lost, unless an approval request in flight is what ended it (then it is judged when that request settles). */
  private noteStaleAuthority(): void {
    const approval = this.approvalInFlight;
    if (!approval) {
      this.requestStop('lost');
      return;
    }
    void approval.then((recorded) => {
      if (!recorded) this.requestStop('lost');
    });
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
    this.armRenewal(this.inbox.waiting ? Math.min(interval, this.env.signalPollMs) : interval);
  }

  private armRenewal(ms: number): void {
    if (this.renewTimer) clearTimeout(this.renewTimer);
    this.renewDueAt = Date.now() + ms;
    this.renewTimer = setTimeout(() => void this.renew(), ms);
  }

  /**
   * The handler started waiting on its signals: bring the next renewal
   * forward to `signalPollMs` from now (renewals then keep that pace while
   * it waits; see {@link scheduleRenewal}), so new signals arrive sooner.
   */
  private pollSoon(): void {
    if (this.renewing || this.renewTimer === undefined || this.renewalStop.signal.aborted) return;
    if (this.renewDueAt - Date.now() > this.env.signalPollMs) this.armRenewal(this.env.signalPollMs);
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
    this.renewing = true;
    try {
      await this.renewOnce();
    } finally {
      this.renewing = false;
    }
  }

  private async renewOnce(): Promise<void> {
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
          scope: 'possibly-applied',
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
      this.inbox.deliver(response.pendingSignals.map(jobSignalOf));
      this.noteRequests(response.cancelRequested, response.pauseRequested);
      this.scheduleRenewal();
    } catch (error) {
      if (this.approvalInFlight) await this.approvalInFlight; // a recorded approval request ends the lease: not a loss
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
        scope: 'possibly-applied',
        signal: this.env.closed,
        deadline: this.outcomeDeadline(),
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

function transitionOf(transition: EffectTransition): MessageInitShape<typeof AdvanceEffectRequestSchema>['transition'] {
  switch (transition.kind) {
    case 'signed':
      return { case: 'signed', value: { externalId: transition.externalId } };
    case 'committed':
      return { case: 'committed', value: { externalId: transition.externalId } };
    case 'recoverable':
      return {
        case: 'recoverable',
        value: {
          reason: EffectRecoveryReason[transition.reason],
          ...(transition.retryNotBefore ? { retryNotBefore: timestampFromDate(transition.retryNotBefore) } : {}),
        },
      };
    case 'resume':
      return { case: 'resume', value: {} };
    case 'cancelled':
      return { case: 'cancelled', value: {} };
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

/** The envelope's last decided approval, as the handler sees it. */
function lastApprovalOf(approval: DecidedApproval | undefined): LastApproval | undefined {
  if (!approval) return undefined;
  return Object.freeze({
    approvalId: approval.approvalId,
    decision: approval.decision === ApprovalDecision.ALLOW ? 'ALLOW' : 'DENY',
    prompt: approval.prompt,
    details: approval.details ?? {},
    decidedAt: approval.decidedAt ? timestampDate(approval.decidedAt) : undefined,
  });
}

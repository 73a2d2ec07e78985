import { create, type JsonObject } from '@bufbuild/protobuf';
import { durationFromMs, durationMs, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createRouterTransport, type HandlerContext } from '@connectrpc/connect';
import {
  EffectCancellation,
  EffectDisposition,
  EffectRecoveryReason,
  EffectSchema,
  EffectState,
  type Effect,
} from '@docket/proto/docket/common/v1/effect_pb.js';
import { JobSchema } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { SignalSchema, SignalState, type Signal } from '@docket/proto/docket/common/v1/signal_pb.js';
import {
  ExecutionService,
  type AdvanceEffectRequest,
  type ReportOutcomeRequest,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import { delay } from '@docket/contracts';
import type { EffectRecord, WorkerRecoveryReason } from '../effect-record.js';
import type { EffectTransition } from '@docket/contracts';
import { FakeEffectStore, FakeRefusal } from './fake-effect-store.js';

/** A fault to inject into the next call of one RPC. */
export type Fault = { code: Code; reason?: string; afterApplying?: boolean };

/** One signal in a fake job's inbox. */
export interface FakeSignal {
  sequence: bigint;
  name: string;
  payload: JsonObject;
  state: 'PENDING' | 'DELIVERED' | 'ACKNOWLEDGED' | 'UNKNOWN';
  attemptId: string;
  redelivered: boolean;
}

export interface FakeJob {
  id: string;
  input: JsonObject;
  checkpoint: JsonObject | undefined;
  fence: bigint;
  attempt?: { id: string; fence: bigint; incarnation: string; expiresAt: number } | undefined;
  status: 'QUEUED' | 'RUNNING' | 'CANCELLING' | 'PAUSED' | 'DONE';
  pauseRequested: boolean;
  attempts: number;
  signals: FakeSignal[];
  /** Approvals requested, in order. */
  approvals: { id: string; prompt: string; details: JsonObject | undefined }[];
  effects: FakeEffectStore;
}

/** The most signals one envelope or renewal carries (proto contract). */
const SIGNALS_PER_DELIVERY = 64;

/**
 * An in-memory ExecutionService with the contract's authority and
 * operation-id rules, enough to drive the SDK without Postgres: leases
 * judged by its own clock, replays by operation id, injected faults,
 * signals (delivered with claims and renewals, repeated until
 * acknowledged), approvals (the attempt ends, the job waits for
 * {@link decide}) and the effect journal ({@link FakeEffectStore}).
 */
export class FakeExecution {
  readonly leaseMs: number;
  readonly jobs: FakeJob[] = [];
  readonly calls: { rpc: string; operationId: string; jobId?: string; at: number; request?: unknown }[] = [];
  readonly outcomes: { jobId: string; outcome: ReportOutcomeRequest['outcome'] }[] = [];
  readonly claimMaxJobs: number[] = [];
  readonly registeredConcurrency: number[] = [];
  /** How long each ReportOutcome answer is held after the outcome is recorded. */
  reportAnswerDelayMs = 0;
  /** How long each AckSignals waits before it is applied (a slow link or server): an outcome sent meanwhile ends the attempt first. */
  ackDelayMs = 0;
  /** Most ReportOutcome calls pending at once. */
  mostReportsPending = 0;
  private reportsPending = 0;
  readonly faults = new Map<string, Fault[]>();
  private readonly replies = new Map<string, unknown>();
  private incarnations: string[] = [];
  private wake = new Set<() => void>();
  private nextId = 0;

  constructor(leaseMs = 300) {
    this.leaseMs = leaseMs;
  }

  submit(input: JsonObject = {}): FakeJob {
    const job: FakeJob = {
      id: `job_${String(++this.nextId).padStart(8, '0')}`,
      input,
      checkpoint: undefined,
      fence: 0n,
      status: 'QUEUED',
      pauseRequested: false,
      attempts: 0,
      signals: [],
      approvals: [],
      effects: new FakeEffectStore(),
    };
    this.jobs.push(job);
    this.wakeClaimers();
    return job;
  }

  cancel(job: FakeJob): void {
    if (job.status === 'RUNNING') job.status = 'CANCELLING';
  }

  supersede(): void {
    this.incarnations = [];
  }

  /** SendSignal: appends a PENDING signal; the next claim or renewal delivers it. */
  sendSignal(job: FakeJob, name: string, payload: JsonObject = {}): FakeSignal {
    const signal: FakeSignal = { sequence: BigInt(job.signals.length + 1), name, payload, state: 'PENDING', attemptId: '', redelivered: false };
    job.signals.push(signal);
    return signal;
  }

  /** DecideApproval: ALLOW re-queues the paused job, DENY ends it. */
  decide(job: FakeJob, allow: boolean): void {
    if (job.status !== 'PAUSED') throw new Error(`decide on a ${job.status} job`);
    job.status = allow ? 'QUEUED' : 'DONE';
    if (allow) this.wakeClaimers();
  }

  /** What the reaper does to an expired lease: the attempt ends, its unacknowledged signals become UNKNOWN, the job is queued again. */
  loseAttempt(job: FakeJob): void {
    for (const signal of job.signals) if (signal.state === 'DELIVERED') signal.state = 'UNKNOWN';
    job.attempt = undefined;
    job.status = 'QUEUED';
    this.wakeClaimers();
  }

  /** ReconcileSignals REDELIVER: UNKNOWN signals are pending again, marked redelivered. */
  redeliver(job: FakeJob): void {
    for (const signal of job.signals) {
      if (signal.state === 'UNKNOWN') {
        signal.state = 'PENDING';
        signal.redelivered = true;
      }
    }
  }

  countOf(rpc: string, jobId?: string): number {
    return this.calls.filter((call) => call.rpc === rpc && (jobId === undefined || call.jobId === jobId)).length;
  }

  transport() {
    return createRouterTransport(({ service }) => {
      service(ExecutionService, {
        registerWorker: (request) => {
          this.registeredConcurrency.push(request.maxConcurrency);
          const incarnation = `wkr_${String(++this.nextId).padStart(8, '0')}`;
          this.incarnations.push(incarnation);
          return { workerIncarnation: incarnation, generation: BigInt(this.incarnations.length), leaseDuration: durationFromMs(this.leaseMs) };
        },
        claimJobs: (request, context) =>
          this.once('ClaimJobs', request.operationId, undefined, undefined, async () => {
            this.checkIncarnation(request.workerIncarnation);
            this.claimMaxJobs.push(request.maxJobs);
            const until = Date.now() + (request.wait ? durationMs(request.wait) : 0);
            for (;;) {
              const claimable = this.jobs.filter((job) => job.status === 'QUEUED').slice(0, Math.max(1, request.maxJobs));
              if (claimable.length > 0 || Date.now() >= until || context.signal.aborted) {
                return {
                  assignments: claimable.map((job) => {
                    job.fence += 1n;
                    job.attempts += 1;
                    job.status = 'RUNNING';
                    job.attempt = { id: `att_${String(++this.nextId).padStart(8, '0')}`, fence: job.fence, incarnation: request.workerIncarnation, expiresAt: Date.now() + this.leaseMs };
                    const ref = { attemptId: job.attempt.id, fence: job.fence, workerIncarnation: request.workerIncarnation };
                    return {
                      authority: ref,
                      envelope: {
                        jobId: job.id,
                        ...ref,
                        queue: 'default',
                        input: job.input,
                        attemptNumber: job.attempts,
                        ...(job.checkpoint ? { checkpoint: job.checkpoint } : {}),
                        pendingSignals: this.deliverSignals(job),
                      },
                    };
                  }),
                };
              }
              await this.waitForWork(until - Date.now(), context);
            }
          }),
        renewAttempt: (request, context) =>
          this.attemptCall('RenewAttempt', request, context, (job) => {
            job.attempt!.expiresAt = Date.now() + this.leaseMs;
            return { cancelRequested: job.status === 'CANCELLING', pauseRequested: job.pauseRequested, pendingSignals: this.deliverSignals(job) };
          }),
        reportProgress: (request, context) =>
          this.attemptCall('ReportProgress', request, context, (job) => ({ cancelRequested: job.status === 'CANCELLING', pauseRequested: job.pauseRequested })),
        saveCheckpoint: (request, context) =>
          this.attemptCall('SaveCheckpoint', request, context, (job) => {
            job.checkpoint = request.checkpoint;
            return {};
          }),
        appendEvents: (request, context) => this.attemptCall('AppendEvents', request, context, () => ({ firstSequence: 7n, lastSequence: 7n })),
        ackSignals: async (request, context) => {
          await delay(this.ackDelayMs);
          return this.attemptCall('AckSignals', request, context, (job) => {
            const mine = job.signals.filter((signal) => signal.attemptId === job.attempt!.id && signal.state !== 'PENDING');
            const highest = mine.reduce((most, signal) => (signal.sequence > most ? signal.sequence : most), 0n);
            if (request.upToSequence < 1n || request.upToSequence > highest) throw refusal(Code.InvalidArgument, 'INVALID_FIELD');
            for (const signal of mine) if (signal.state === 'DELIVERED' && signal.sequence <= request.upToSequence) signal.state = 'ACKNOWLEDGED';
            return {};
          });
        },
        requestApproval: (request, context) =>
          this.attemptCall('RequestApproval', request, context, (job) => {
            if (job.status === 'CANCELLING') throw refusal(Code.FailedPrecondition, 'ILLEGAL_TRANSITION');
            const approvalId = `apr_${String(++this.nextId).padStart(8, '0')}`;
            job.approvals.push({ id: approvalId, prompt: request.prompt, details: request.details });
            job.status = 'PAUSED';
            job.attempt = undefined;
            return { approvalId };
          }),
        beginEffect: (request, context) =>
          this.attemptCall('BeginEffect', request, context, (job) =>
            this.effectCall(() => {
              const { record, created } = job.effects.begin(request.kind, request.idempotencyKey, request.inputDigest, job.attempt!.id);
              return { effect: effectOf(record, job.id), disposition: created ? EffectDisposition.CREATED : EffectDisposition.REPLAYED };
            }),
          ),
        advanceEffect: (request, context) =>
          this.attemptCall('AdvanceEffect', request, context, (job) =>
            this.effectCall(() => ({
              effect: effectOf(job.effects.advance(request.effectId, request.expectedRevision, transitionOf(request.transition), job.attempt!.id), job.id),
            })),
          ),
        listRecoverableEffects: (request, context) =>
          this.attemptCall('ListRecoverableEffects', { ...request, operationId: `list-${++this.nextId}` }, context, (job) => ({
            effects: job.effects.unfinished(request.limit === 0 ? 256 : request.limit).map((record) => effectOf(record, job.id)),
          })),
        reportOutcome: (request, context) =>
          this.answerLate(() =>
            this.attemptCall('ReportOutcome', request, context, (job) => {
              this.outcomes.push({ jobId: job.id, outcome: request.outcome });
              job.attempt = undefined;
              if (request.outcome.case === 'paused') {
                job.status = 'QUEUED';
                job.pauseRequested = false;
              } else {
                job.status = 'DONE';
              }
              return { job: create(JobSchema, { id: job.id, status: request.outcome.case === 'success' ? JobStatus.SUCCEEDED : JobStatus.FAILED }) };
            }),
          ),
      });
    });
  }

  /** Hands the job's pending signals to its current attempt; every signal delivered to it and not acknowledged, at most 64. */
  private deliverSignals(job: FakeJob): Signal[] {
    if (job.signals.some((signal) => signal.state === 'UNKNOWN')) return []; // nothing later is delivered until reconciled
    const attemptId = job.attempt!.id;
    const outstanding = (): FakeSignal[] => job.signals.filter((signal) => signal.state === 'DELIVERED' && signal.attemptId === attemptId);
    for (const signal of job.signals) {
      if (outstanding().length >= SIGNALS_PER_DELIVERY) break;
      if (signal.state === 'PENDING') {
        signal.state = 'DELIVERED';
        signal.attemptId = attemptId;
      }
    }
    return outstanding()
      .slice(0, SIGNALS_PER_DELIVERY)
      .map((signal) =>
        create(SignalSchema, {
          jobId: job.id,
          sequence: signal.sequence,
          name: signal.name,
          payload: signal.payload,
          state: SignalState.DELIVERED,
          attemptId,
          redelivered: signal.redelivered,
        }),
      );
  }

  private effectCall<T>(apply: () => T): T {
    try {
      return apply();
    } catch (error) {
      if (error instanceof FakeRefusal) throw refusal(error.code, error.reason);
      throw error;
    }
  }

  private wakeClaimers(): void {
    for (const wake of this.wake) wake();
  }

  /** Runs one ReportOutcome, counting it as pending until its answer, which comes `reportAnswerDelayMs` late. */
  private async answerLate<T>(report: () => Promise<T>): Promise<T> {
    this.mostReportsPending = Math.max(this.mostReportsPending, ++this.reportsPending);
    try {
      const answer = await report();
      await delay(this.reportAnswerDelayMs);
      return answer;
    } finally {
      this.reportsPending--;
    }
  }

  private checkIncarnation(incarnation: string): void {
    if (!this.incarnations.includes(incarnation)) throw refusal(Code.FailedPrecondition, 'STALE_INCARNATION');
  }

  private attemptCall<T>(
    rpc: string,
    request: { attempt?: { attemptId: string; fence: bigint; workerIncarnation: string } | undefined; operationId: string },
    _context: HandlerContext,
    apply: (job: FakeJob) => T,
  ): Promise<T> {
    const job = this.jobs.find((candidate) => candidate.attempt?.id === request.attempt?.attemptId);
    return this.once(rpc, request.operationId, job?.id, request, async () => {
      this.checkIncarnation(request.attempt?.workerIncarnation ?? '');
      const live = job?.attempt && job.attempt.fence === request.attempt?.fence && job.attempt.expiresAt > Date.now();
      if (!job || !live) throw refusal(Code.FailedPrecondition, 'STALE_AUTHORITY');
      return apply(job);
    });
  }

  /** Replays by operation id and applies injected faults (before or after applying the call). */
  private async once<T>(rpc: string, operationId: string, jobId: string | undefined, request: unknown, apply: () => Promise<T>): Promise<T> {
    this.calls.push({ rpc, operationId, ...(jobId ? { jobId } : {}), at: Date.now(), request });
    const key = `${rpc}/${operationId}`;
    const fault = this.faults.get(rpc)?.shift();
    if (fault && !fault.afterApplying) throw refusal(fault.code, fault.reason);
    if (!this.replies.has(key)) this.replies.set(key, await apply());
    if (fault) throw refusal(fault.code, fault.reason);
    return this.replies.get(key) as T;
  }

  private waitForWork(ms: number, context: HandlerContext): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wake.delete(done);
        context.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(1, ms));
      this.wake.add(done);
      context.signal.addEventListener('abort', done);
    });
  }
}

/** A refusal as the service sends it: the code, with ErrorInfo naming the reason. */
export function refusal(code: Code, reason?: string): ConnectError {
  return new ConnectError('refused', code, undefined, reason ? [{ desc: ErrorInfoSchema, value: { reason, domain: 'docket' } }] : []);
}

/** The wire's Effect for a fake record: the inverse of the SDK's `effectRecordOf`. */
export function effectOf(record: EffectRecord, jobId: string): Effect {
  const stamp = (date: Date | undefined) => (date ? timestampFromDate(date) : undefined);
  return create(EffectSchema, {
    effectId: record.effectId,
    kind: record.kind,
    state: EffectState[record.state],
    revision: record.revision,
    externalId: record.externalId ?? '',
    ...(record.recovery
      ? {
          recovery: {
            point: EffectState[record.recovery.point],
            reason: EffectRecoveryReason[record.recovery.reason],
            attempt: record.recovery.attempt,
            retryNotBefore: stamp(record.recovery.retryNotBefore),
            attemptId: record.recovery.attemptId,
            recordedAt: stamp(record.recovery.recordedAt),
          },
        }
      : {}),
    cancellation: EffectCancellation[record.cancellation],
    jobId,
    idempotencyKey: record.key,
    inputDigest: record.inputDigest,
    attemptId: record.attemptId,
    createdAt: stamp(record.createdAt),
    updatedAt: stamp(record.updatedAt),
    committedAt: stamp(record.committedAt),
  });
}

function transitionOf(transition: AdvanceEffectRequest['transition']): EffectTransition {
  switch (transition.case) {
    case 'signed':
      return { kind: 'signed', externalId: transition.value.externalId };
    case 'committed':
      return { kind: 'committed', externalId: transition.value.externalId };
    case 'recoverable': {
      const reason = EffectRecoveryReason[transition.value.reason] as WorkerRecoveryReason | 'CANCELLED_BEFORE_COMMIT' | 'UNSPECIFIED';
      if (reason === 'CANCELLED_BEFORE_COMMIT' || reason === 'UNSPECIFIED') throw refusal(Code.InvalidArgument, 'INVALID_FIELD');
      const at = transition.value.retryNotBefore;
      return { kind: 'recoverable', reason, retryNotBefore: at ? new Date(Number(at.seconds) * 1000 + Math.floor(at.nanos / 1e6)) : undefined };
    }
    case 'resume':
      return { kind: 'resume' };
    case 'cancelled':
      return { kind: 'cancelled' };
    default:
      throw refusal(Code.InvalidArgument, 'INVALID_FIELD');
  }
}

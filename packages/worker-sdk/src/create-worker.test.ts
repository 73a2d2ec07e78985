import { create, type JsonObject } from '@bufbuild/protobuf';
import { durationFromMs, durationMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createRouterTransport, type HandlerContext } from '@connectrpc/connect';
import { afterEach, describe, expect, it } from 'vitest';
import { JobSchema } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { ExecutionService, type ReportOutcomeRequest } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import { abortKindOf } from './abort-reason.js';
import { createWorker, type Worker } from './create-worker.js';
import { delay } from './delay.js';
import { permanentFailure } from './job-failure.js';
import type { JobHandler } from './job-context.js';
import type { WorkerOptions } from './worker-options.js';

/** A fault to inject into the next call of one RPC. */
type Fault = { code: Code; reason?: string; afterApplying?: boolean };

interface FakeJob {
  id: string;
  input: JsonObject;
  checkpoint: JsonObject | undefined;
  fence: bigint;
  attempt?: { id: string; fence: bigint; incarnation: string; expiresAt: number } | undefined;
  status: 'QUEUED' | 'RUNNING' | 'CANCELLING' | 'DONE';
  pauseRequested: boolean;
  attempts: number;
}

/**
 * An in-memory ExecutionService with the contract's authority and
 * operation-id rules, enough to drive the SDK without Postgres: leases
 * judged by its own clock, replays by operation id, injected faults.
 */
class FakeExecution {
  readonly leaseMs: number;
  readonly jobs: FakeJob[] = [];
  readonly calls: { rpc: string; operationId: string; jobId?: string; at: number }[] = [];
  readonly outcomes: { jobId: string; outcome: ReportOutcomeRequest['outcome'] }[] = [];
  readonly claimMaxJobs: number[] = [];
  readonly registeredConcurrency: number[] = [];
  /** How long each ReportOutcome answer is held after the outcome is recorded. */
  reportAnswerDelayMs = 0;
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
    const job: FakeJob = { id: `job_${String(++this.nextId).padStart(8, '0')}`, input, checkpoint: undefined, fence: 0n, status: 'QUEUED', pauseRequested: false, attempts: 0 };
    this.jobs.push(job);
    for (const wake of this.wake) wake();
    return job;
  }

  cancel(job: FakeJob): void {
    if (job.status === 'RUNNING') job.status = 'CANCELLING';
  }

  supersede(): void {
    this.incarnations = [];
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
          this.once('ClaimJobs', request.operationId, undefined, async () => {
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
                      envelope: { jobId: job.id, ...ref, queue: 'default', input: job.input, attemptNumber: job.attempts, ...(job.checkpoint ? { checkpoint: job.checkpoint } : {}) },
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
            return { cancelRequested: job.status === 'CANCELLING', pauseRequested: job.pauseRequested };
          }),
        reportProgress: (request, context) =>
          this.attemptCall('ReportProgress', request, context, (job) => ({ cancelRequested: job.status === 'CANCELLING', pauseRequested: job.pauseRequested })),
        saveCheckpoint: (request, context) =>
          this.attemptCall('SaveCheckpoint', request, context, (job) => {
            job.checkpoint = request.checkpoint;
            return {};
          }),
        appendEvents: (request, context) => this.attemptCall('AppendEvents', request, context, () => ({ firstSequence: 7n, lastSequence: 7n })),
        reportOutcome: (request, context) =>
          this.answerLate(() => this.attemptCall('ReportOutcome', request, context, (job) => {
            this.outcomes.push({ jobId: job.id, outcome: request.outcome });
            job.attempt = undefined;
            if (request.outcome.case === 'paused') {
              job.status = 'QUEUED';
              job.pauseRequested = false;
            } else {
              job.status = 'DONE';
            }
            return { job: create(JobSchema, { id: job.id, status: request.outcome.case === 'success' ? JobStatus.SUCCEEDED : JobStatus.FAILED }) };
          })),
      });
    });
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
    return this.once(rpc, request.operationId, job?.id, async () => {
      this.checkIncarnation(request.attempt?.workerIncarnation ?? '');
      const live = job?.attempt && job.attempt.fence === request.attempt?.fence && job.attempt.expiresAt > Date.now();
      if (!job || !live) throw refusal(Code.FailedPrecondition, 'STALE_AUTHORITY');
      return apply(job);
    });
  }

  /** Replays by operation id and applies injected faults (before or after applying the call). */
  private async once<T>(rpc: string, operationId: string, jobId: string | undefined, apply: () => Promise<T>): Promise<T> {
    this.calls.push({ rpc, operationId, ...(jobId ? { jobId } : {}), at: Date.now() });
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

function refusal(code: Code, reason?: string): ConnectError {
  return new ConnectError('refused', code, undefined, reason ? [{ desc: ErrorInfoSchema, value: { reason, domain: 'docket' } }] : []);
}

const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop()));
});

function startWorker(fake: FakeExecution, handler: JobHandler, options: Partial<WorkerOptions> = {}): Worker {
  const worker = createWorker({ transport: fake.transport(), name: 'unit', queues: ['default'], concurrency: 2, claimWaitMs: 200, handler, ...options });
  workers.push(worker);
  return worker;
}

/** A handler that takes `ms()` per job and counts how many jobs run at once. */
function concurrencyProbe(ms: () => number): { handler: JobHandler; readonly most: number } {
  let inFlight = 0;
  let most = 0;
  return {
    handler: async () => {
      most = Math.max(most, ++inFlight);
      await delay(ms());
      inFlight--;
    },
    get most() {
      return most;
    },
  };
}

async function until(condition: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await delay(10);
  }
}

describe('createWorker against an in-memory execution service', () => {
  it('runs a job: progress, checkpoint and event each with their own operation id, then success', async () => {
    const fake = new FakeExecution();
    const job = fake.submit({ count: 2 });
    const worker = startWorker(fake, async (ctx) => {
      await ctx.progress(1, 2, 'half');
      await ctx.saveCheckpoint({ at: 1 });
      expect(ctx.checkpoint).toEqual({ at: 1 });
      expect(await ctx.emit('worker.step', { at: 1 })).toBe(7n);
      return { counted: ctx.input['count'] };
    });
    await worker.start();
    await until(() => fake.outcomes.length === 1);
    expect(fake.outcomes[0]).toMatchObject({ jobId: job.id, outcome: { case: 'success', value: { result: { counted: 2 } } } });
    const ids = fake.calls.filter((call) => call.jobId === job.id).map((call) => call.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => /^op_[a-z2-7]{26}$/.test(id))).toBe(true);
  });

  it('never has more attempts in flight than its concurrency, and asks only for free slots', async () => {
    const fake = new FakeExecution();
    for (let i = 0; i < 9; i++) fake.submit();
    const probe = concurrencyProbe(() => 30 + Math.random() * 40);
    const worker = startWorker(fake, probe.handler, { concurrency: 3 });
    await worker.start();
    await until(() => fake.outcomes.length === 9);
    expect(probe.most).toBe(3);
    expect(worker.stats.maxRunning).toBe(3);
    expect(Math.max(...fake.claimMaxJobs)).toBe(3);
    expect(fake.claimMaxJobs.every((n) => n >= 1 && n <= 3)).toBe(true);
  });

  it('renews at a third of the lease, keeps a long handler alive, and stops renewing when it ends', async () => {
    const fake = new FakeExecution(300);
    const job = fake.submit();
    const worker = startWorker(fake, async () => {
      await delay(1_500);
      return { slept: 1_500 };
    });
    await worker.start();
    await until(() => fake.outcomes.length === 1);
    expect(fake.outcomes[0]?.outcome.case).toBe('success');
    const renewals = fake.countOf('RenewAttempt', job.id);
    expect(renewals).toBeGreaterThanOrEqual(12); // 1500 / 100 = 15, minus timer slack
    expect(renewals).toBeLessThanOrEqual(16);
    await delay(400);
    expect(fake.countOf('RenewAttempt', job.id)).toBe(renewals);
  });

  it('aborts the handler with reason cancel when a renewal reports cancel_requested, and reports cancelled', async () => {
    const fake = new FakeExecution();
    const job = fake.submit();
    let seen: string | undefined;
    const worker = startWorker(fake, async (ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      seen = abortKindOf(ctx.signal);
      return { finished: false };
    });
    await worker.start();
    await until(() => job.status === 'RUNNING');
    fake.cancel(job);
    await until(() => fake.outcomes.length === 1);
    expect(seen).toBe('cancel');
    expect(fake.outcomes[0]?.outcome.case).toBe('cancelled');
  });

  it('on pause lets the handler checkpoint, reports paused, and the next attempt starts from the checkpoint with a higher fence', async () => {
    const fake = new FakeExecution();
    const job = fake.submit();
    const seen: { fence: bigint; checkpoint: JsonObject | undefined }[] = [];
    const worker = startWorker(fake, async (ctx) => {
      seen.push({ fence: ctx.fence, checkpoint: ctx.checkpoint });
      if (ctx.checkpoint) return { resumedAt: ctx.checkpoint['at'] };
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      expect(abortKindOf(ctx.signal)).toBe('pause');
      await ctx.saveCheckpoint({ at: 5 });
    });
    await worker.start();
    await until(() => job.status === 'RUNNING');
    job.pauseRequested = true;
    await until(() => fake.outcomes.length === 2);
    expect(fake.outcomes.map((o) => o.outcome.case)).toEqual(['paused', 'success']);
    expect(seen).toEqual([{ fence: 1n, checkpoint: undefined }, { fence: 2n, checkpoint: { at: 5 } }]);
  });

  it('stops quietly on STALE_AUTHORITY: the signal aborts with lost and nothing is reported', async () => {
    const fake = new FakeExecution();
    const job = fake.submit();
    let seen: string | undefined;
    const worker = startWorker(fake, async (ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      seen = abortKindOf(ctx.signal);
      return { done: true };
    });
    await worker.start();
    await until(() => job.status === 'RUNNING');
    job.attempt!.fence = 99n; // another attempt took over
    await until(() => seen !== undefined);
    await until(() => worker.running === 0);
    expect(seen).toBe('lost');
    expect(fake.countOf('ReportOutcome')).toBe(0);
  });

  it('retries a call whose answer was lost with the same operation id, and the replay answers it', async () => {
    const fake = new FakeExecution();
    fake.submit();
    fake.faults.set('ReportOutcome', [{ code: Code.Unavailable, afterApplying: true }, { code: Code.DeadlineExceeded }]);
    fake.faults.set('ReportProgress', [{ code: Code.Unavailable }]);
    const worker = startWorker(fake, async (ctx) => {
      await ctx.progress(1, 1);
      return { ok: true };
    });
    await worker.start();
    await until(() => worker.running === 0 && fake.countOf('ReportOutcome') === 3);
    const reports = fake.calls.filter((call) => call.rpc === 'ReportOutcome');
    expect(new Set(reports.map((call) => call.operationId)).size).toBe(1);
    expect(fake.outcomes).toHaveLength(1);
    const progress = fake.calls.filter((call) => call.rpc === 'ReportProgress');
    expect(progress).toHaveLength(2);
    expect(progress[0]?.operationId).toBe(progress[1]?.operationId);
  });

  it('does not retry a refusal (FAILED_PRECONDITION) and rejects the helper with its reason', async () => {
    const fake = new FakeExecution();
    fake.submit();
    fake.faults.set('SaveCheckpoint', [{ code: Code.FailedPrecondition, reason: 'OPERATION_MISMATCH' }]);
    let caught: unknown;
    const worker = startWorker(fake, async (ctx) => {
      await ctx.saveCheckpoint({ at: 1 }).catch((error: unknown) => (caught = error));
    });
    await worker.start();
    await until(() => fake.outcomes.length === 1);
    expect(caught).toMatchObject({ name: 'DocketWorkerError', code: Code.FailedPrecondition, reason: 'OPERATION_MISMATCH' });
    expect(fake.countOf('SaveCheckpoint')).toBe(1);
  });

  it('reports typed failures with their class and other errors as INTERNAL without their text', async () => {
    const fake = new FakeExecution();
    fake.submit({ kind: 'typed' });
    fake.submit({ kind: 'secret' });
    const worker = startWorker(fake, (ctx) => {
      if (ctx.input['kind'] === 'typed') throw permanentFailure('INVALID_INPUT', 'count must be positive', { field: 'count' });
      throw new Error('connect postgres://admin:hunter2@db failed');
    });
    await worker.start();
    await until(() => fake.outcomes.length === 2);
    const byJob = Object.fromEntries(fake.outcomes.map((o) => [o.jobId, o.outcome]));
    expect(byJob['job_00000001']).toMatchObject({ case: 'failure', value: { failureClass: 1, message: 'count must be positive', safeDetails: { field: 'count' } } });
    expect(byJob['job_00000002']).toMatchObject({ case: 'failure', value: { failureClass: 9, message: 'the job handler failed' } });
    expect(JSON.stringify(fake.outcomes, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toContain('hunter2');
  });

  it('exits when its incarnation is superseded, aborting running handlers with lost', async () => {
    const fake = new FakeExecution();
    const job = fake.submit();
    let seen: string | undefined;
    const worker = startWorker(fake, async (ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      seen = abortKindOf(ctx.signal);
    });
    await worker.start();
    await until(() => job.status === 'RUNNING');
    fake.supersede();
    const exit = await worker.done;
    expect(exit).toMatchObject({ reason: 'superseded', error: { reason: 'STALE_INCARNATION' }, abandoned: 0 });
    expect(seen).toBe('lost');
    expect(fake.countOf('ReportOutcome')).toBe(0);
  });

  it('drains: running handlers finish and report, and nothing new is claimed', async () => {
    const fake = new FakeExecution();
    fake.submit();
    fake.submit();
    const worker = startWorker(fake, async () => {
      await delay(300);
      return { ok: true };
    });
    await worker.start();
    await until(() => worker.running === 2);
    const drained = worker.drain();
    await until(() => worker.state === 'draining');
    const late = fake.submit();
    await drained;
    expect(await worker.done).toMatchObject({ reason: 'drained', abandoned: 0 });
    expect(fake.outcomes).toHaveLength(2);
    expect(late.status).toBe('QUEUED');
  });

  it('after the drain grace period asks handlers to shut down; unfinished work is left to lease expiry', async () => {
    const fake = new FakeExecution();
    fake.submit();
    let seen: string | undefined;
    const worker = startWorker(fake, async (ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      seen = abortKindOf(ctx.signal);
      throw ctx.signal.reason;
    });
    await worker.start();
    await until(() => worker.running === 1);
    await worker.drain({ graceMs: 100 });
    expect(seen).toBe('shutdown');
    expect(await worker.done).toMatchObject({ reason: 'drained', abandoned: 0 });
    expect(fake.countOf('ReportOutcome')).toBe(0);
  });

  it('with prefetch, claims for the free slots plus the buffer, registers room for reports in flight, and runs one job at a time', async () => {
    const fake = new FakeExecution();
    for (let i = 0; i < 4; i++) fake.submit();
    const probe = concurrencyProbe(() => 40);
    const worker = startWorker(fake, probe.handler, { concurrency: 1, prefetch: 2 });
    await worker.start();
    await until(() => fake.outcomes.length === 4);
    expect(fake.registeredConcurrency).toEqual([4]); // 1 handler + 1 report in flight + 2 prefetched
    expect(fake.claimMaxJobs[0]).toBe(3);
    expect(probe.most).toBe(1);
    expect(worker.stats).toMatchObject({ maxRunning: 1, maxPrefetched: 2 });
  });

  it('reports a prefetched job cancelled or paused before it starts at once, without running its handler', async () => {
    const fake = new FakeExecution();
    const running = fake.submit({ name: 'running' });
    const cancelled = fake.submit({ name: 'cancelled' });
    const paused = fake.submit({ name: 'paused' });
    const started: unknown[] = [];
    const worker = startWorker(
      fake,
      async (ctx) => {
        started.push(ctx.input['name']);
        await delay(ctx.input['name'] === 'running' ? 1_000 : 10);
      },
      { concurrency: 1, prefetch: 2 },
    );
    await worker.start();
    await until(() => worker.prefetched === 2);
    fake.cancel(cancelled);
    paused.pauseRequested = true;
    await until(() => fake.outcomes.length === 2);
    expect(Object.fromEntries(fake.outcomes.map((o) => [o.jobId, o.outcome.case]))).toEqual({ [cancelled.id]: 'cancelled', [paused.id]: 'paused' });
    expect(started).toEqual(['running']);
    await until(() => fake.outcomes.length === 4); // the paused job is claimed again once it is re-queued
    expect(fake.outcomes.find((o) => o.jobId === running.id)?.outcome.case).toBe('success');
    expect(started).toEqual(['running', 'paused']);
  });

  it('keeps at most concurrency reports in flight: a finished handler keeps its slot until a report slot frees', async () => {
    const fake = new FakeExecution(2_000);
    fake.reportAnswerDelayMs = 100;
    for (let i = 0; i < 8; i++) fake.submit();
    const worker = startWorker(fake, () => ({}), { concurrency: 2 });
    await worker.start();
    await until(() => fake.outcomes.length === 8 && worker.running === 0);
    expect(fake.mostReportsPending).toBe(2);
    expect(worker.stats).toMatchObject({ maxRunning: 2, maxReportsInFlight: 2 });
  });

  it('checks its options before connecting', () => {
    const base = { transport: new FakeExecution().transport(), name: 'w', queues: ['default'], concurrency: 1, handler: () => undefined };
    expect(() => createWorker({ ...base, concurrency: 0 })).toThrow(/concurrency/);
    expect(() => createWorker({ ...base, queues: [] })).toThrow(/queues/);
    expect(() => createWorker({ ...base, name: 'has space' })).toThrow(/name/);
    expect(() => createWorker({ ...base, leaseRenewFraction: 1 })).toThrow(/leaseRenewFraction/);
    expect(() => createWorker({ ...base, claimBatchSize: 0 })).toThrow(/claimBatchSize/);
    expect(() => createWorker({ ...base, claimBatchSize: 101 })).toThrow(/claimBatchSize/);
    expect(() => createWorker({ ...base, prefetch: -1 })).toThrow(/prefetch/);
    expect(() => createWorker({ ...base, prefetch: 1.5 })).toThrow(/prefetch/);
    expect(() => createWorker({ name: 'w', queues: ['default'], concurrency: 1, handler: () => undefined })).toThrow(/token/);
  });
});

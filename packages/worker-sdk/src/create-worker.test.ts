import type { JsonObject } from '@bufbuild/protobuf';
import { Code } from '@connectrpc/connect';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { abortKindOf } from './abort-reason.js';
import { createWorker } from './create-worker.js';
import { delay } from '@docket/contracts';
import { permanentFailure } from './job-failure.js';
import type { JobHandler } from './job-context.js';
import { FakeExecution } from './testing/fake-execution.js';
import { startWorker, stopWorkers } from './testing/fake-workers.js';
import { aborted, until } from './testing/waits.js';

afterEach(stopWorkers);

/** A handler that waits until its attempt's signal aborts, keeps the abort's kind, then returns `result`. */
function abortProbe(result?: JsonObject): { handler: JobHandler; readonly kind: string | undefined } {
  let kind: string | undefined;
  return {
    handler: async (ctx) => {
      await aborted(ctx.signal);
      kind = abortKindOf(ctx.signal);
      return result;
    },
    get kind() {
      return kind;
    },
  };
}

/** A worker on a fresh fake whose one job is RUNNING under an {@link abortProbe} handler that returns `result`. */
async function runningUnderAbortProbe(result?: JsonObject) {
  const fake = new FakeExecution();
  const job = fake.submit();
  const probe = abortProbe(result);
  const worker = startWorker(fake, probe.handler);
  await worker.start();
  await until(() => job.status === 'RUNNING');
  return { fake, job, probe, worker };
}

/** A handler that takes `ms()` per job and counts how many jobs run at once. */
function concurrencyProbe(ms: () => number): { handler: JobHandler; readonly most: number } {
  let inFlight = 0;
  let most = 0;
  return {
    handler: async () => {
      most = Math.max(most, ++inFlight);
      // Real time: the handler's work takes time, so that jobs overlap.
      await delay(ms());
      inFlight--;
    },
    get most() {
      return most;
    },
  };
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
    // On a fake clock (timers, Date.now, performance.now), so the schedule
    // is checked to the millisecond however busy the machine is.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
    try {
      const fake = new FakeExecution(300);
      const job = fake.submit();
      const worker = startWorker(fake, async () => {
        await delay(1_500);
        return { slept: 1_500 };
      });
      await worker.start();
      await vi.advanceTimersByTimeAsync(1_600);
      expect(fake.outcomes).toHaveLength(1);
      expect(fake.outcomes[0]).toMatchObject({ jobId: job.id, outcome: { case: 'success' } });
      // The only job: every call is about it (a renewal of an ended attempt carries no job id).
      const callsAt = (rpc: string) => fake.calls.filter((call) => call.rpc === rpc).map((call) => call.at);
      const claimedAt = callsAt('ClaimJobs')[0]!;
      const reportedAt = callsAt('ReportOutcome')[0]!;
      const renewals = callsAt('RenewAttempt').filter((at) => at <= reportedAt);
      // A third of the 300 ms lease: the first up to a quarter early, then one
      // every 100 ms after the previous answer, for as long as the handler runs
      // (1,400 ms after the first).
      expect(renewals.length).toBeGreaterThanOrEqual(14);
      expect(renewals[0]! - claimedAt).toBeGreaterThanOrEqual(75);
      expect(renewals[0]! - claimedAt).toBeLessThanOrEqual(100);
      expect(renewals.slice(1).map((at, index) => at - renewals[index]!)).toEqual(new Array(renewals.length - 1).fill(100));
      expect(reportedAt - renewals.at(-1)!).toBeLessThanOrEqual(100);
      // None after the outcome, however long the worker stays up.
      await vi.advanceTimersByTimeAsync(1_000);
      expect(callsAt('RenewAttempt').filter((at) => at > reportedAt)).toEqual([]);
      const stopped = worker.stop();
      await vi.advanceTimersByTimeAsync(1_000);
      await stopped;
    } finally {
      vi.useRealTimers();
    }
  });

  it('aborts the handler with reason cancel when a renewal reports cancel_requested, and reports cancelled', async () => {
    const { fake, job, probe } = await runningUnderAbortProbe({ finished: false });
    fake.cancel(job);
    await until(() => fake.outcomes.length === 1);
    expect(probe.kind).toBe('cancel');
    expect(fake.outcomes[0]?.outcome.case).toBe('cancelled');
  });

  it('on pause lets the handler checkpoint, reports paused, and the next attempt starts from the checkpoint with a higher fence', async () => {
    const fake = new FakeExecution();
    const job = fake.submit();
    const seen: { fence: bigint; checkpoint: JsonObject | undefined }[] = [];
    const worker = startWorker(fake, async (ctx) => {
      seen.push({ fence: ctx.fence, checkpoint: ctx.checkpoint });
      if (ctx.checkpoint) return { resumedAt: ctx.checkpoint['at'] };
      await aborted(ctx.signal);
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
    const { fake, job, probe, worker } = await runningUnderAbortProbe({ done: true });
    job.attempt!.fence = 99n; // another attempt took over
    await until(() => probe.kind !== undefined);
    await until(() => worker.running === 0);
    expect(probe.kind).toBe('lost');
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

  it('keeps retrying an outcome with its operation id past many failures (a Postgres restart), so a finished job does not run again', async () => {
    // A lease long enough for every try on a loaded machine: the SDK stops retrying once the lease is over.
    const fake = new FakeExecution(30_000);
    fake.submit();
    const failures = 30;
    fake.faults.set('ReportOutcome', Array.from({ length: failures }, () => ({ code: Code.Unavailable })));
    // No backoff between the tries (full jitter drawn at 0): the count of tries is what is under test.
    vi.spyOn(Math, 'random').mockReturnValue(0);
    try {
      const worker = startWorker(fake, async () => ({ ok: true }));
      await worker.start();
      await until(() => fake.outcomes.length === 1);
      const reports = fake.calls.filter((call) => call.rpc === 'ReportOutcome');
      expect(reports).toHaveLength(failures + 1);
      expect(new Set(reports.map((call) => call.operationId)).size).toBe(1);
      expect(fake.countOf('ClaimJobs')).toBeGreaterThan(0);
    } finally {
      vi.restoreAllMocks();
    }
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
    const { fake, probe, worker } = await runningUnderAbortProbe();
    fake.supersede();
    const exit = await worker.done;
    expect(exit).toMatchObject({ reason: 'superseded', error: { reason: 'STALE_INCARNATION' }, abandoned: 0 });
    expect(probe.kind).toBe('lost');
    expect(fake.countOf('ReportOutcome')).toBe(0);
  });

  it('drains: running handlers finish and report, and nothing new is claimed', async () => {
    const fake = new FakeExecution();
    fake.submit();
    fake.submit();
    let finish!: () => void;
    const finishing = new Promise<void>((resolve) => (finish = resolve));
    const worker = startWorker(fake, async () => {
      await finishing; // the handlers run until the late job is submitted
      return { ok: true };
    });
    await worker.start();
    await until(() => worker.running === 2);
    const drained = worker.drain();
    await until(() => worker.state === 'draining');
    const late = fake.submit();
    finish();
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
      await aborted(ctx.signal);
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
    // The running job holds the only slot until the test lets it go, so the
    // prefetched jobs' reports cannot race its end however slow the machine.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const worker = startWorker(
      fake,
      async (ctx) => {
        started.push(ctx.input['name']);
        // Real time: the prefetched jobs' handlers take a moment.
        await (ctx.input['name'] === 'running' ? released : delay(10));
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
    release();
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
    expect(() => createWorker({ ...base, signalPollMs: 5 })).toThrow(/signalPollMs/);
    expect(() => createWorker({ ...base, signalPollMs: 60_001 })).toThrow(/signalPollMs/);
    expect(() => createWorker({ name: 'w', queues: ['default'], concurrency: 1, handler: () => undefined })).toThrow(/token/);
  });
});

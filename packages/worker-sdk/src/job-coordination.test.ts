import { Code } from '@connectrpc/connect';
import { afterEach, describe, expect, it } from 'vitest';
import { abortKindOf } from './abort-reason.js';
import { delay } from '@docket/contracts';
import type { EffectRecord } from './effect-record.js';
import type { EffectSteps } from './effect-runner.js';
import type { JobContext } from './job-context.js';
import type { JobSignal } from './signal-inbox.js';
import { FakeExecution } from './testing/fake-execution.js';
import { startWorker, stopWorkers } from './testing/fake-workers.js';
import { aborted, until } from './testing/waits.js';
import type { WorkerLogger } from './worker-logger.js';

/*
 * The handler-facing coordination helpers through a real worker against
 * the in-memory execution service: approvals end the attempt, signals are
 * delivered once each and acknowledged after they are taken, and the
 * effect journal lets a replacement attempt finish what a lost one began.
 */

afterEach(stopWorkers);

/** A logger that keeps each line's `event` field. */
function eventLog(): WorkerLogger & { events: string[] } {
  const events: string[] = [];
  const keep = (_message: string, fields?: Readonly<Record<string, unknown>>) => events.push(String(fields?.['event']));
  return { events, debug: keep, info: keep, warn: keep, error: keep };
}

describe('requestApproval', () => {
  it('ends the attempt: no outcome, no more renewals, helpers refuse; ALLOW runs a new attempt from the checkpoint', async () => {
    const fake = new FakeExecution();
    const job = fake.submit({ amount: 5 });
    const log = eventLog();
    const seen: { attempt: number; fence: bigint; checkpoint: unknown }[] = [];
    let approvalId: string | undefined;
    let afterwards: { kind: string | undefined; saveCheckpoint: unknown } | undefined;
    const worker = startWorker(
      fake,
      async (ctx) => {
        seen.push({ attempt: ctx.attemptNumber, fence: ctx.fence, checkpoint: ctx.checkpoint });
        if (!ctx.checkpoint?.['approved']) {
          await ctx.saveCheckpoint({ approved: true });
          ({ approvalId } = await ctx.requestApproval('Ship it?', { amount: 5 }));
          afterwards = { kind: abortKindOf(ctx.signal), saveCheckpoint: await ctx.saveCheckpoint({ approved: false }).catch((error: unknown) => error) };
          return { ignored: true };
        }
        return { shipped: true };
      },
      { logger: log },
    );
    await worker.start();
    await until(() => job.status === 'PAUSED' && afterwards !== undefined);
    expect(approvalId).toBe(job.approvals[0]?.id);
    expect(job.approvals[0]).toMatchObject({ prompt: 'Ship it?', details: { amount: 5 } });
    expect(afterwards).toEqual({ kind: 'approval', saveCheckpoint: expect.objectContaining({ name: 'DocketWorkerError', reason: 'ATTEMPT_ENDED' }) });
    const renewals = fake.countOf('RenewAttempt', job.id);
    // Real time: a negative assertion over more than three renewal intervals.
    await delay(400);
    expect(fake.countOf('RenewAttempt', job.id)).toBe(renewals);
    expect(fake.countOf('ReportOutcome')).toBe(0);
    expect(job.checkpoint).toEqual({ approved: true });

    fake.decide(job, true);
    await until(() => fake.outcomes.length === 1);
    expect(fake.outcomes[0]).toMatchObject({ jobId: job.id, outcome: { case: 'success', value: { result: { shipped: true } } } });
    expect(seen).toEqual([
      { attempt: 1, fence: 1n, checkpoint: undefined },
      { attempt: 2, fence: 2n, checkpoint: { approved: true } },
    ]);
    expect(log.events).toContain('attempt.approval_requested');
    expect(log.events).not.toContain('attempt.lost');
    expect(log.events).not.toContain('attempt.renewal_failed');
  });

  it('is not taken for a lost lease when renewals see the attempt end before the request answers', async () => {
    const fake = new FakeExecution(300); // renewals every 100 ms
    const job = fake.submit();
    // The request commits at once but its answer is lost three times: renewals meanwhile get STALE_AUTHORITY.
    fake.faults.set('RequestApproval', [{ code: Code.Unavailable, afterApplying: true }, { code: Code.Unavailable }, { code: Code.Unavailable }, { code: Code.Unavailable }]);
    const log = eventLog();
    let outcome: { approvalId: string; kind: string | undefined } | undefined;
    const worker = startWorker(
      fake,
      async (ctx) => {
        const { approvalId } = await ctx.requestApproval('Go on?');
        outcome = { approvalId, kind: abortKindOf(ctx.signal) };
      },
      { logger: log },
    );
    await worker.start();
    await until(() => outcome !== undefined);
    expect(fake.countOf('RequestApproval')).toBe(5);
    expect(new Set(fake.calls.filter((call) => call.rpc === 'RequestApproval').map((call) => call.operationId)).size).toBe(1);
    const staleRenewals = fake.calls.filter((call) => call.rpc === 'RenewAttempt' && call.at > fake.calls.find((c) => c.rpc === 'RequestApproval')!.at);
    expect(staleRenewals.length).toBeGreaterThan(0); // the race did happen
    expect(outcome).toEqual({ approvalId: job.approvals[0]!.id, kind: 'approval' });
    await until(() => worker.running === 0);
    expect(log.events).not.toContain('attempt.lost');
    expect(log.events).not.toContain('attempt.renewal_failed');
    expect(fake.countOf('ReportOutcome')).toBe(0);
  });

  it('is refused while the job is CANCELLING (ILLEGAL_TRANSITION); the attempt goes on and reports cancelled', async () => {
    const fake = new FakeExecution();
    const job = fake.submit();
    let refusal: unknown;
    const worker = startWorker(fake, async (ctx) => {
      await aborted(ctx.signal);
      refusal = await ctx.requestApproval('Go on?').catch((error: unknown) => error);
    });
    await worker.start();
    await until(() => job.status === 'RUNNING');
    fake.cancel(job);
    await until(() => fake.outcomes.length === 1);
    expect(refusal).toMatchObject({ name: 'DocketWorkerError', code: Code.FailedPrecondition, reason: 'ILLEGAL_TRANSITION' });
    expect(fake.outcomes[0]?.outcome.case).toBe('cancelled');
  });

  it('acknowledges the signals the handler took before asking', async () => {
    const fake = new FakeExecution();
    const job = fake.submit();
    fake.sendSignal(job, 'first');
    fake.sendSignal(job, 'second');
    const worker = startWorker(fake, async (ctx) => {
      for await (const signal of ctx.signals) {
        if (signal.name === 'second') return ctx.requestApproval('Both seen; go on?');
      }
    });
    await worker.start();
    await until(() => job.status === 'PAUSED');
    expect(job.signals.map((signal) => signal.state)).toEqual(['ACKNOWLEDGED', 'ACKNOWLEDGED']);
    const rpcs = fake.calls.filter((call) => call.jobId === job.id).map((call) => call.rpc);
    expect(rpcs.lastIndexOf('AckSignals')).toBeLessThan(rpcs.indexOf('RequestApproval'));
  });
});

describe('job.signals', () => {
  it('yields the envelope\'s signals, then new ones within about signalPollMs, each once, and acknowledges them before the outcome', async () => {
    const fake = new FakeExecution(3_000); // lease renewals every second, unless the handler waits on its signals
    fake.ackDelayMs = 40; // an acknowledgement still on its way when the outcome is sent would be refused
    const job = fake.submit();
    fake.sendSignal(job, 'add', { n: 2 });
    const taken: { signal: JobSignal; at: number }[] = [];
    let sentAt = 0;
    const worker = startWorker(
      fake,
      async (ctx) => {
        for await (const signal of ctx.signals) {
          taken.push({ signal, at: Date.now() });
          if (signal.name === 'stop') break;
          // Real time: slow enough that renewals repeat what is not acknowledged yet.
          await delay(60);
        }
        return { took: taken.length };
      },
      { signalPollMs: 25 },
    );
    await worker.start();
    await until(() => taken.length === 1);
    for (const n of [1, 2, 3]) fake.sendSignal(job, 'add', { n });
    await until(() => taken.length === 4);
    sentAt = Date.now();
    fake.sendSignal(job, 'stop');
    await until(() => fake.outcomes.length === 1);
    expect(taken.map(({ signal }) => [signal.sequence, signal.name, signal.payload, signal.redelivered])).toEqual([
      [1n, 'add', { n: 2 }, false],
      [2n, 'add', { n: 1 }, false],
      [3n, 'add', { n: 2 }, false],
      [4n, 'add', { n: 3 }, false],
      [5n, 'stop', {}, false],
    ]);
    expect(taken.at(-1)!.at - sentAt).toBeLessThan(500); // polled: the lease timer alone would take up to a second
    expect(job.signals.every((signal) => signal.state === 'ACKNOWLEDGED')).toBe(true);
    const rpcs = fake.calls.filter((call) => call.jobId === job.id).map((call) => call.rpc);
    expect(rpcs.lastIndexOf('AckSignals')).toBeLessThan(rpcs.indexOf('ReportOutcome'));
    // Every acknowledgement names a sequence the handler had already taken.
    const acked = fake.calls.filter((call) => call.rpc === 'AckSignals').map((call) => (call.request as { upToSequence: bigint }).upToSequence);
    expect(acked.every((upTo, index) => index === 0 || upTo > acked[index - 1]!)).toBe(true);
  });

  it('renews at the lease timer\'s pace when the handler does not wait on its signals', async () => {
    const fake = new FakeExecution(3_000);
    const job = fake.submit();
    const worker = startWorker(fake, async () => {
      // Real time: the handler runs 500 ms, less than the 750 ms before the lease timer's first renewal.
      await delay(500);
    }, { signalPollMs: 25 });
    await worker.start();
    await until(() => fake.outcomes.length === 1);
    expect(fake.countOf('RenewAttempt', job.id)).toBe(0); // the first renewal is due after 750 ms at the earliest
  });

  it('ends when the job is cancelled, and a taken signal left unacknowledged by a lost attempt comes back redelivered', async () => {
    const fake = new FakeExecution();
    const job = fake.submit();
    fake.sendSignal(job, 'charge', { order: 7 });
    const seen: { attempt: number; signals: JobSignal[]; end: string | undefined }[] = [];
    let release: () => void = () => undefined;
    const worker = startWorker(fake, async (ctx: JobContext) => {
      const entry: (typeof seen)[number] = { attempt: ctx.attemptNumber, signals: [], end: undefined };
      seen.push(entry);
      for await (const signal of ctx.signals) {
        entry.signals.push(signal);
        if (ctx.attemptNumber === 1) await new Promise<void>((resolve) => (release = resolve)); // still handling it when the lease is lost
      }
      entry.end = abortKindOf(ctx.signal);
    });
    await worker.start();
    await until(() => seen[0]?.signals.length === 1);
    fake.loseAttempt(job); // the reaper: the delivered, unacknowledged signal is UNKNOWN now
    await until(() => seen.length === 2); // claimed again at once; nothing is delivered while a signal is UNKNOWN
    expect(seen[1]!.signals).toEqual([]);
    release();
    await until(() => seen[0]?.end !== undefined);
    fake.redeliver(job);
    await until(() => seen[1]?.signals.length === 1);
    fake.cancel(job);
    await until(() => fake.outcomes.length === 1);
    expect(seen[0]).toMatchObject({ attempt: 1, end: 'lost' });
    expect(seen[1]).toMatchObject({ attempt: 2, end: 'cancel' });
    expect(seen[1]!.signals[0]).toEqual({ sequence: 1n, name: 'charge', payload: { order: 7 }, redelivered: true });
    expect(fake.outcomes[0]?.outcome.case).toBe('cancelled');
    expect(job.signals[0]?.state).toBe('ACKNOWLEDGED'); // taken by the second attempt before the loop ended
  });
});

describe('job.effect across attempts', () => {
  /** An external system that deduplicates by key, as `sign` requires. */
  function ledger() {
    const submitted = new Map<string, string>();
    const confirmed = new Set<string>();
    let signs = 0;
    let commits = 0;
    const steps = (gate?: () => Promise<void>): EffectSteps => ({
      sign: ({ key }) => {
        signs++;
        if (!submitted.has(key)) submitted.set(key, `ext-${submitted.size + 1}`);
        return submitted.get(key)!;
      },
      commit: async ({ externalId }) => {
        commits++;
        await gate?.();
        confirmed.add(externalId);
      },
    });
    return { steps, confirmed, counts: () => ({ signs, commits }) };
  }

  it('a replacement attempt finishes a SIGNED effect a lost attempt left: commit only, sign not repeated', async () => {
    const fake = new FakeExecution();
    const job = fake.submit();
    const external = ledger();
    let open: () => void = () => undefined;
    const gate = () => new Promise<void>((resolve) => (open = resolve));
    const found: EffectRecord[][] = [];
    const errors: unknown[] = [];
    const worker = startWorker(fake, async (ctx) => {
      if (ctx.attemptNumber > 1) found.push([...(await ctx.recoverableEffects())]);
      try {
        const result = await ctx.effect('ledger.record', 'ledger-record-job-00000001', { counted: 3 }, external.steps(ctx.attemptNumber === 1 ? gate : undefined));
        return { externalId: result.externalId, replayed: result.replayed, resumed: result.resumed };
      } catch (error) {
        errors.push(error);
        throw error;
      }
    });
    await worker.start();
    await until(() => external.counts().commits === 1);
    fake.loseAttempt(job); // lost while confirming: the record stays SIGNED
    open();
    await until(() => fake.outcomes.length === 1);
    expect(errors).toEqual([expect.objectContaining({ name: 'DocketWorkerError', reason: 'STALE_AUTHORITY' })]);
    expect(found).toEqual([[expect.objectContaining({ kind: 'ledger.record', key: 'ledger-record-job-00000001', state: 'SIGNED', externalId: 'ext-1', revision: 2n })]]);
    expect(fake.outcomes[0]?.outcome).toMatchObject({ case: 'success', value: { result: { externalId: 'ext-1', replayed: false, resumed: true } } });
    expect(external.counts()).toEqual({ signs: 1, commits: 2 });
    expect(job.effects.byKey('ledger-record-job-00000001')).toMatchObject({ state: 'COMMITTED', externalId: 'ext-1' });
  });

  it('a replacement attempt gets a committed effect replayed and runs no step', async () => {
    const fake = new FakeExecution();
    const job = fake.submit();
    const external = ledger();
    let hold: () => void = () => undefined;
    const results: unknown[] = [];
    const worker = startWorker(fake, async (ctx) => {
      const result = await ctx.effect('ledger.record', 'ledger-record-job-00000001', { counted: 3 }, external.steps());
      results.push(result);
      if (ctx.attemptNumber === 1) await new Promise<void>((resolve) => (hold = resolve)); // lost before its outcome
      return { externalId: result.externalId };
    });
    await worker.start();
    await until(() => results.length === 1);
    fake.loseAttempt(job);
    hold();
    await until(() => fake.outcomes.length === 1);
    expect(results).toEqual([
      { effectId: 'eff_00000001', externalId: 'ext-1', replayed: false, resumed: false },
      { effectId: 'eff_00000001', externalId: 'ext-1', replayed: true, resumed: true },
    ]);
    expect(external.counts()).toEqual({ signs: 1, commits: 1 });
  });
});

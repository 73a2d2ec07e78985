import { describe, expect, it } from 'vitest';
import { JobAbortedError, type AbortKind, type EffectResult, type JobContext, type JobResult, type JobSignal, type LastApproval } from '@docket/worker-sdk';
import { DEMO_EFFECT_KIND, DemoLedger, demoHandler } from './worker-demo-handler.js';

interface FakeJob {
  readonly context: JobContext;
  readonly progress: number[];
  readonly checkpoints: JobResult[];
  readonly events: string[];
  readonly approvals: { prompt: string; details: JobResult | undefined }[];
  readonly effects: { kind: string; key: string; input: JobResult; result: EffectResult }[];
  abort(kind: AbortKind): void;
  /** Hands the handler a signal, as a renewal would. */
  signal(name: string, payload?: JobResult): void;
}

/** A JobContext that records what the handler reports; `abortAfterProgress` aborts once that many steps were reported. */
/** The last approval as an ALLOW of the demo's request with these details. */
function allowed(details: JobResult): LastApproval {
  return { approvalId: 'apr_test0000', decision: 'ALLOW', prompt: 'continue?', details: details as LastApproval['details'], decidedAt: undefined };
}

function fakeJob(input: JobResult, checkpoint?: JobResult, abortAfterProgress?: { steps: number; kind: AbortKind }, lastApproval?: LastApproval): FakeJob {
  const controller = new AbortController();
  const progress: number[] = [];
  const checkpoints: JobResult[] = [];
  const events: string[] = [];
  const approvals: FakeJob['approvals'] = [];
  const effects: FakeJob['effects'] = [];
  const abort = (kind: AbortKind): void => controller.abort(new JobAbortedError(kind));
  const queued: JobSignal[] = [];
  let wake: (() => void) | undefined;
  controller.signal.addEventListener('abort', () => wake?.());
  const signals: AsyncIterable<JobSignal> = {
    async *[Symbol.asyncIterator]() {
      while (!controller.signal.aborted) {
        const next = queued.shift();
        if (next) yield next;
        else await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
  const context: JobContext = {
    jobId: 'job_test0000',
    attemptId: 'att_test0000',
    fence: 3n,
    attemptNumber: 2,
    queue: 'default',
    input: input as JobContext['input'],
    checkpoint: checkpoint as JobContext['checkpoint'],
    parentResults: {},
    parentResultsTruncated: false,
    lastApproval,
    signal: controller.signal,
    progress: async (completed) => {
      progress.push(completed);
      if (abortAfterProgress && completed === abortAfterProgress.steps) abort(abortAfterProgress.kind);
    },
    saveCheckpoint: async (value) => {
      checkpoints.push(value);
    },
    emit: async (type) => {
      events.push(type);
      return 1n;
    },
    requestApproval: async (prompt, details) => {
      approvals.push({ prompt, details });
      abort('approval');
      return { approvalId: 'apr_test0000' };
    },
    signals,
    effect: async (kind, key, effectInput, steps) => {
      const externalId = await steps.sign({ kind, key, input: effectInput as JobContext['input'], signal: controller.signal, resumed: false, recovery: undefined });
      await steps.commit({ kind, key, input: effectInput as JobContext['input'], signal: controller.signal, resumed: false, recovery: undefined, externalId });
      const result = { effectId: 'eff_test0000', externalId, replayed: false, resumed: false };
      effects.push({ kind, key, input: effectInput, result });
      return result;
    },
    recoverableEffects: async () => [],
  };
  return {
    context,
    progress,
    checkpoints,
    events,
    approvals,
    effects,
    abort,
    signal: (name, payload = {}) => {
      queued.push({ sequence: BigInt(queued.length + 1), name, payload: payload as JobSignal['payload'], redelivered: false });
      wake?.();
    },
  };
}

describe('the docket worker demo handler', () => {
  it('counts to count with progress after each step and a checkpoint every five', async () => {
    const job = fakeJob({ count: 12, delay_ms: 0 });
    const result = await demoHandler({ say: () => undefined })(job.context);
    expect(result).toEqual({ counted: 12, resumed_from: 0 });
    expect(job.progress).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(job.checkpoints).toEqual([{ at: 5 }, { at: 10 }]);
    expect(job.events).toEqual(['worker.demo_started']);
  });

  it('resumes from checkpoint.at', async () => {
    const job = fakeJob({ count: 8, delay_ms: 0 }, { at: 6 });
    const lines: string[] = [];
    expect(await demoHandler({ say: (line) => lines.push(line) })(job.context)).toEqual({ counted: 8, resumed_from: 6 });
    expect(job.progress).toEqual([7, 8]);
    expect(lines[0]).toContain('resuming at 6/8');
  });

  it('on pause saves a checkpoint at the current step and returns', async () => {
    const job = fakeJob({ count: 20, delay_ms: 1 }, undefined, { steps: 7, kind: 'pause' });
    expect(await demoHandler({ say: () => undefined })(job.context)).toBeUndefined();
    expect(job.progress).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(job.checkpoints.at(-1)).toEqual({ at: 7 });
  });

  it('on cancel stops without a checkpoint', async () => {
    const job = fakeJob({ count: 20, delay_ms: 1 }, undefined, { steps: 3, kind: 'cancel' });
    expect(await demoHandler({ say: () => undefined })(job.context)).toBeUndefined();
    expect(job.progress).toEqual([1, 2, 3]);
    expect(job.checkpoints).toEqual([]);
  });

  it('at approve_at saves a checkpoint, asks for approval for that step and ends the attempt', async () => {
    const job = fakeJob({ count: 10, delay_ms: 0, approve_at: 4 });
    const lines: string[] = [];
    expect(await demoHandler({ say: (line) => lines.push(line) })(job.context)).toBeUndefined();
    expect(job.progress).toEqual([1, 2, 3, 4]);
    expect(job.checkpoints).toEqual([{ at: 4 }]);
    expect(job.approvals).toEqual([{ prompt: 'Let job job_test0000 continue past step 4 of 10?', details: { at: 4, count: 10 } }]);
    expect(lines).toContain('job_test0000 waiting for approval apr_test0000');
  });

  it('after ALLOW (the last approval, for this step) continues from the approval step without asking again', async () => {
    const job = fakeJob({ count: 12, delay_ms: 0, approve_at: 4 }, { at: 4 }, undefined, allowed({ at: 4, count: 12 }));
    const lines: string[] = [];
    expect(await demoHandler({ say: (line) => lines.push(line) })(job.context)).toEqual({ counted: 12, resumed_from: 4 });
    expect(job.approvals).toEqual([]);
    expect(job.progress).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);
    expect(job.checkpoints).toEqual([{ at: 5 }, { at: 10 }]);
    expect(lines).toContain('job_test0000 approved: continuing from 4/12');
  });

  it('asks again when the checkpoint is at the step but no approval for it was decided (lost before the request was durable)', async () => {
    const lost = fakeJob({ count: 12, delay_ms: 0, approve_at: 4 }, { at: 4 });
    expect(await demoHandler({ say: () => undefined })(lost.context)).toBeUndefined();
    expect(lost.approvals).toHaveLength(1);
    const otherStep = fakeJob({ count: 12, delay_ms: 0, approve_at: 4 }, { at: 4 }, undefined, allowed({ at: 2, count: 12 }));
    expect(await demoHandler({ say: () => undefined })(otherStep.context)).toBeUndefined();
    expect(otherStep.approvals).toHaveLength(1);
  });

  it('asks before counting at all with approve_at 0, and before the result with approve_at = count', async () => {
    const first = fakeJob({ count: 3, delay_ms: 0, approve_at: 0 });
    await demoHandler({ say: () => undefined })(first.context);
    expect([first.progress, first.checkpoints, first.approvals.length]).toEqual([[], [{ at: 0 }], 1]);
    const last = fakeJob({ count: 3, delay_ms: 0, approve_at: 3 });
    expect(await demoHandler({ say: () => undefined })(last.context)).toBeUndefined();
    expect([last.progress, last.approvals.length]).toEqual([[1, 2, 3], 1]);
  });

  it('prints each signal and lets add {n} advance the count', async () => {
    const job = fakeJob({ count: 20, delay_ms: 5 });
    const lines: string[] = [];
    job.signal('add', { n: 10 });
    job.signal('hello');
    job.signal('add', { n: 'many' });
    expect(await demoHandler({ say: (line) => lines.push(line) })(job.context)).toEqual({ counted: 20, resumed_from: 0 });
    expect(lines.filter((line) => line.includes(' signal '))).toEqual(['job_test0000 signal 1 add', 'job_test0000 signal 2 hello', 'job_test0000 signal 3 add']);
    expect(job.progress).toHaveLength(10); // 20 steps, 10 of them skipped by the one valid add
    expect(job.progress[0]).toBe(11);
  });

  it('with effect records the count once under a key derived from the job id and returns the external id', async () => {
    const job = fakeJob({ count: 2, delay_ms: 0, effect: true });
    const ledger = new DemoLedger();
    const lines: string[] = [];
    const result = await demoHandler({ say: (line) => lines.push(line), ledger })(job.context);
    expect(job.effects).toEqual([{ kind: DEMO_EFFECT_KIND, key: 'demo-record-job_test0000', input: { counted: 2 }, result: expect.objectContaining({ externalId: 'ledger-000001' }) }]);
    expect(result).toEqual({ counted: 2, resumed_from: 0, external_id: 'ledger-000001' });
    expect(ledger.confirmed('ledger-000001')).toBe(true);
    expect(lines.join('\n')).not.toContain('demo-record-job_test0000');
    expect(lines.join('\n')).not.toContain('ledger-000001');
  });

  it('has a ledger that deduplicates by key, as an effect\'s sign step needs', () => {
    const ledger = new DemoLedger();
    expect(ledger.submit('demo-record-job_a')).toBe(ledger.submit('demo-record-job_a'));
    expect(ledger.submit('demo-record-job_b')).not.toBe(ledger.submit('demo-record-job_a'));
  });

  it('fails bad input permanently', async () => {
    for (const input of [{ count: 0 }, { count: 'ten' }, { count: 5, delay_ms: -1 }, { count: 5, approve_at: 6 }, { count: 5, approve_at: 1.5 }, { count: 5, effect: 'yes' }]) {
      await expect(demoHandler({ say: () => undefined })(fakeJob(input).context)).rejects.toMatchObject({
        name: 'JobFailure',
        failureClass: 'INVALID_INPUT',
      });
    }
  });
});

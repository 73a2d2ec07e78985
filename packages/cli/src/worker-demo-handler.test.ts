import { describe, expect, it } from 'vitest';
import { JobAbortedError, type AbortKind, type JobContext, type JobResult } from '@docket/worker-sdk';
import { demoHandler } from './worker-demo-handler.js';

interface FakeJob {
  readonly context: JobContext;
  readonly progress: number[];
  readonly checkpoints: JobResult[];
  readonly events: string[];
  abort(kind: AbortKind): void;
}

/** A JobContext that records what the handler reports; `abortAfterProgress` aborts once that many steps were reported. */
function fakeJob(input: JobResult, checkpoint?: JobResult, abortAfterProgress?: { steps: number; kind: AbortKind }): FakeJob {
  const controller = new AbortController();
  const progress: number[] = [];
  const checkpoints: JobResult[] = [];
  const events: string[] = [];
  const abort = (kind: AbortKind): void => controller.abort(new JobAbortedError(kind));
  const context: JobContext = {
    jobId: 'job_test0000',
    attemptId: 'att_test0000',
    fence: 3n,
    attemptNumber: 2,
    queue: 'default',
    input: input as JobContext['input'],
    checkpoint: checkpoint as JobContext['checkpoint'],
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
  };
  return { context, progress, checkpoints, events, abort };
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

  it('fails bad input permanently', async () => {
    for (const input of [{ count: 0 }, { count: 'ten' }, { count: 5, delay_ms: -1 }]) {
      await expect(demoHandler({ say: () => undefined })(fakeJob(input).context)).rejects.toMatchObject({
        name: 'JobFailure',
        failureClass: 'INVALID_INPUT',
      });
    }
  });
});

import type { JsonObject } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import {
  abortKindOf,
  permanentFailure,
  retryableFailure,
  type JobContext,
  type JobHandler,
  type Worker,
  type WorkerLogger,
  type WorkerOptions,
} from '@docket/worker-sdk';
import { clientFor } from './support/clients.js';
import type { DocketServices } from './support/docket-services.js';
import { startInProcessCluster, stopInProcessClusters } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { newIdempotencyKey } from './support/keys.js';
import { startSdkWorker, stopSdkWorkers } from './support/sdk-workers.js';

/*
 * The worker SDK against real processes (SPEC sections 4 and 5): a
 * handler's job runs to SUCCEEDED with its progress and checkpoints on the
 * job, cancel and pause arrive as an AbortSignal with their reason and end
 * the job CANCELLED / PAUSED, a resumed job restarts from its checkpoint
 * under a higher fence, concurrency is never exceeded, renewal outlives
 * several leases, drain claims nothing new, and typed failures map to their
 * dispositions. Leases are 2 s so that renewal is exercised many times.
 * Every test uses its own queue and worker name.
 */

/** Short enough to run a handler past several leases, long enough that a loaded machine does not lose one between renewals. */
const LEASE_MS = 3_000;
const OWNER = 'sdk-owner';

let cluster: DocketServices;
let admission: Client<typeof AdmissionService>;
let events: Client<typeof EventService>;
let workerToken: string;

beforeAll(async () => {
  cluster = await startInProcessCluster({
    databaseUrl: await createMigratedTestDatabase('worker sdk'),
    env: { state: { DOCKET_LEASE_MS: String(LEASE_MS) } },
  });
  const ownerToken = await cluster.tokenFor(OWNER, 'user');
  admission = clientFor(AdmissionService, cluster.admission.url, ownerToken);
  events = clientFor(EventService, cluster.events.url, ownerToken);
  workerToken = await cluster.tokenFor('sdk-worker', 'worker');
});

afterEach(stopSdkWorkers);

afterAll(stopInProcessClusters);

/** A started worker on `queue` (its name is the queue's), stopped after the test. */
function startWorker(queue: string, handler: JobHandler, options: Partial<WorkerOptions> = {}): Promise<Worker> {
  return startSdkWorker({
    url: cluster.execution.url,
    token: workerToken,
    name: `sdk-${queue}`,
    queues: [queue],
    concurrency: 2,
    claimWaitMs: 5_000,
    handler,
    ...options,
  });
}

async function submit(queue: string, input: JsonObject = {}, extra: { maxAttempts?: number } = {}): Promise<string> {
  const response = await admission.submitJob({
    idempotencyKey: newIdempotencyKey(queue),
    queue,
    input,
    retryPolicy: { maxAttempts: extra.maxAttempts ?? 3, initialBackoff: durationFromMs(50), maxBackoff: durationFromMs(100) },
  });
  return response.job!.id;
}

async function getJob(jobId: string): Promise<Job> {
  return (await admission.getJob({ jobId })).job!;
}

/** Polls GetJob every 50 ms until `accept` holds; fails after `timeoutMs`. */
async function waitForJob(jobId: string, accept: (job: Job) => boolean, timeoutMs = 20_000): Promise<Job> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await getJob(jobId);
    if (accept(job)) return job;
    if (Date.now() > deadline) throw new Error(`${jobId} is ${JobStatus[job.status]}, still not as expected after ${timeoutMs} ms`);
    // Real time: the poll interval of this wait.
    await sleep(50);
  }
}

const statusIs = (status: JobStatus) => (job: Job) => job.status === status;

async function eventTypes(jobId: string): Promise<string[]> {
  const page = await events.readJobEvents({ jobId, afterSequence: 0n, pageSize: 256 });
  return page.events.map((event) => event.type);
}

/** Resolves after `ms`, or at once when `signal` aborts (each caller says why it waits on real time). */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    // Real time: this is the sleep itself.
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Polls `condition` every 20 ms until it holds; fails after `timeoutMs`. */
function until(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return (async () => {
    while (!condition()) {
      if (Date.now() > deadline) throw new Error('condition not met in time');
      // Real time: the poll interval of this wait.
      await sleep(20);
    }
  })();
}

/**
 * The demo's shape: counts from the checkpoint (or 0) to `input.count`,
 * reporting progress each step and checkpointing every `every` steps; on
 * pause checkpoints the current step and returns; on cancel stops.
 */
function counter(every = 2, seen: { fence: bigint; checkpoint: JsonObject | undefined; stop?: string }[] = []): JobHandler {
  return async (job: JobContext) => {
    const count = Number(job.input['count']);
    const delayMs = Number(job.input['delay_ms'] ?? 50);
    const from = Number(job.checkpoint?.['at'] ?? 0);
    const record: (typeof seen)[number] = { fence: job.fence, checkpoint: job.checkpoint };
    seen.push(record);
    await job.emit('worker.counter_started', { from });
    let at = from;
    while (at < count && !job.signal.aborted) {
      // Real time: the handler's work takes time, so that its progress can be seen and it can be stopped midway.
      await sleep(delayMs, job.signal);
      if (job.signal.aborted) break;
      at += 1;
      await job.progress(at, count, `at ${at}`);
      if (at % every === 0) await job.saveCheckpoint({ at });
    }
    const stop = abortKindOf(job.signal);
    if (stop) record.stop = stop;
    if (stop === 'pause') await job.saveCheckpoint({ at });
    if (stop) return undefined;
    return { counted: count, from };
  };
}

describe('the worker SDK on a real cluster', () => {
  it('runs a counting job to SUCCEEDED with progress and checkpoints on the job and in its journal', async () => {
    await startWorker('sdk-success', counter(2));
    const jobId = await submit('sdk-success', { count: 8, delay_ms: 100 });
    const midway = await waitForJob(jobId, (job) => job.status === JobStatus.RUNNING && (job.progress?.completedUnits ?? 0n) >= 3n);
    expect(midway.progress).toMatchObject({ totalUnits: 8n, message: expect.stringMatching(/^at \d$/) });
    expect(midway.checkpointPresent).toBe(true);
    const done = await waitForJob(jobId, statusIs(JobStatus.SUCCEEDED));
    expect(done.result).toEqual({ counted: 8, from: 0 });
    expect(done.attemptCount).toBe(1);
    expect(done.progress?.completedUnits).toBe(8n);
    const types = await eventTypes(jobId);
    expect(types.filter((type) => type === 'checkpoint.saved')).toHaveLength(4);
    expect(types).toEqual(expect.arrayContaining(['job.admitted', 'attempt.started', 'worker.counter_started', 'job.succeeded']));
  });

  it('fires the AbortSignal with reason cancel when a running job is cancelled, and the job ends CANCELLED', async () => {
    const seen: Parameters<typeof counter>[1] = [];
    await startWorker('sdk-cancel', counter(100, seen));
    const jobId = await submit('sdk-cancel', { count: 1000, delay_ms: 20 });
    await waitForJob(jobId, (job) => (job.progress?.completedUnits ?? 0n) >= 5n);
    const cancelling = await admission.cancelJob({ idempotencyKey: newIdempotencyKey('cancel'), jobId });
    expect(cancelling.job?.status).toBe(JobStatus.CANCELLING);
    const done = await waitForJob(jobId, statusIs(JobStatus.CANCELLED));
    expect(seen).toEqual([expect.objectContaining({ stop: 'cancel' })]);
    expect(done.progress?.completedUnits).toBeLessThan(1000n);
    expect(await eventTypes(jobId)).toEqual(expect.arrayContaining(['job.cancel_requested', 'job.cancelled']));
  });

  it('on pause lets the handler checkpoint and ends PAUSED; resumed, the next claim starts from the checkpoint under a higher fence', async () => {
    const seen: Parameters<typeof counter>[1] = [];
    await startWorker('sdk-pause', counter(1_000, seen));
    const jobId = await submit('sdk-pause', { count: 30, delay_ms: 50 });
    await waitForJob(jobId, (job) => (job.progress?.completedUnits ?? 0n) >= 4n);
    await admission.pauseJob({ idempotencyKey: newIdempotencyKey('pause'), jobId });
    const paused = await waitForJob(jobId, statusIs(JobStatus.PAUSED));
    expect(paused.checkpointPresent).toBe(true);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.stop).toBe('pause');
    const pausedAt = Number(paused.progress?.completedUnits);
    expect(pausedAt).toBeGreaterThanOrEqual(4);

    await admission.resumeJob({ idempotencyKey: newIdempotencyKey('resume'), jobId });
    const done = await waitForJob(jobId, statusIs(JobStatus.SUCCEEDED));
    expect(seen).toHaveLength(2);
    expect(seen[1]?.checkpoint).toEqual({ at: pausedAt });
    expect(seen[1]!.fence).toBeGreaterThan(seen[0]!.fence);
    expect(done.result).toEqual({ counted: 30, from: pausedAt });
    expect(done.attemptCount).toBe(2);
    expect(await eventTypes(jobId)).toEqual(expect.arrayContaining(['job.pause_requested', 'job.paused', 'job.resumed']));
  });

  it('never runs more handlers at once than its concurrency', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const worker = await startWorker(
      'sdk-concurrency',
      async () => {
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        // Real time: handlers of uneven length that overlap, so the worker is tested at its limit as they come and go.
        await sleep(100 + Math.random() * 150);
        inFlight -= 1;
        return {};
      },
      { concurrency: 3 },
    );
    const jobIds = await Promise.all(Array.from({ length: 15 }, () => submit('sdk-concurrency')));
    for (const jobId of jobIds) await waitForJob(jobId, statusIs(JobStatus.SUCCEEDED));
    expect(maxInFlight).toBe(3);
    expect(worker.stats.maxRunning).toBe(3);
  });

  it('renews the lease so a handler running three lease durations still succeeds with its one attempt', async () => {
    const worker = await startWorker('sdk-renewal', async (job) => {
      // Real time: the handler must outlive three real leases (LEASE_MS is the shortest a loaded machine keeps safely).
      await sleep(3 * LEASE_MS, job.signal);
      return { aborted: job.signal.aborted };
    });
    const jobId = await submit('sdk-renewal');
    const done = await waitForJob(jobId, statusIs(JobStatus.SUCCEEDED));
    expect(done.result).toEqual({ aborted: false });
    expect(done.attemptCount).toBe(1);
    // one renewal per third of the lease (plus each call's latency): at most about 9 in three leases
    expect(worker.stats.renewals).toBeGreaterThanOrEqual(3); // three leases cannot be covered with fewer
    expect(worker.stats.renewals).toBeLessThanOrEqual(10);
    expect(await eventTypes(jobId)).not.toContain('attempt.lost');
  });

  it('drains: running handlers finish and report, and nothing new is claimed', async () => {
    const lines: string[] = [];
    const logger: WorkerLogger = { info: (m) => lines.push(m), warn: (m) => lines.push(m), error: (m) => lines.push(m) };
    let finish!: () => void;
    const finishing = new Promise<void>((resolve) => (finish = resolve));
    const worker = await startWorker(
      'sdk-drain',
      async () => {
        await finishing; // the handlers run until the late jobs are submitted
        return { finished: true };
      },
      { logger },
    );
    const running = [await submit('sdk-drain'), await submit('sdk-drain')];
    await until(() => worker.running === 2);
    const drained = worker.drain();
    await until(() => lines.includes('claiming stopped'));
    const late = [await submit('sdk-drain'), await submit('sdk-drain')];
    finish();
    await drained;
    expect(await worker.done).toMatchObject({ reason: 'drained', abandoned: 0 });
    for (const jobId of running) expect((await getJob(jobId)).status).toBe(JobStatus.SUCCEEDED);
    // Real time: a negative assertion: a claim the drained worker had in flight would have taken a late job by now.
    await sleep(500);
    for (const jobId of late) expect((await getJob(jobId)).status).toBe(JobStatus.QUEUED);
  });

  it('ends a typed permanent failure FAILED at once, and retries a retryable one', async () => {
    const attemptsSeen = new Map<string, number>();
    await startWorker('sdk-failures', (job) => {
      attemptsSeen.set(job.jobId, job.attemptNumber);
      switch (job.input['kind']) {
        case 'permanent':
          throw permanentFailure('INVALID_INPUT', 'count must be positive', { field: 'count' });
        case 'retryable':
          if (job.attemptNumber === 1) throw retryableFailure('TRANSIENT', 'the upstream was busy');
          return { attempt: job.attemptNumber };
        default:
          throw new Error('db password=hunter2 rejected');
      }
    });
    const permanent = await submit('sdk-failures', { kind: 'permanent' });
    const retryable = await submit('sdk-failures', { kind: 'retryable' });
    const secret = await submit('sdk-failures', { kind: 'secret' }, { maxAttempts: 1 });

    const failed = await waitForJob(permanent, statusIs(JobStatus.FAILED));
    expect(failed.failure).toMatchObject({ failureClass: FailureClass.INVALID_INPUT, retryable: false, message: 'count must be positive', safeDetails: { field: 'count' } });
    expect(failed.attemptCount).toBe(1);

    const succeeded = await waitForJob(retryable, statusIs(JobStatus.SUCCEEDED));
    expect(succeeded.attemptCount).toBe(2);
    expect(succeeded.result).toEqual({ attempt: 2 });
    expect(await eventTypes(retryable)).toEqual(expect.arrayContaining(['attempt.failed', 'job.retry_scheduled']));

    const internal = await waitForJob(secret, statusIs(JobStatus.FAILED));
    expect(internal.failure).toMatchObject({ failureClass: FailureClass.INTERNAL, message: 'the job handler failed' });
    expect(JSON.stringify(internal.failure?.safeDetails ?? {})).not.toContain('hunter2');
  });
});

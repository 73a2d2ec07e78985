import type { Client } from '@connectrpc/connect';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { clientFor } from '../../../test/support/clients.js';
import type { DocketServices } from '../../../test/support/docket-services.js';
import { startInProcessCluster, stopInProcessClusters } from '../../../test/support/in-process-cluster.js';
import { createMigratedTestDatabase } from '../../../test/support/database.js';
import { newIdempotencyKey } from '../../../test/support/keys.js';
import { startSdkWorker, stopSdkWorkers } from '../../../test/support/sdk-workers.js';
import type { Worker } from './create-worker.js';
import { delay } from '@docket/contracts';
import type { JobHandler } from './job-context.js';
import { startDelayingProxy, type DelayingProxy, type ProxiedCall } from './testing/delaying-proxy.js';
import type { WorkerOptions } from './worker-options.js';

/*
 * How the SDK keeps claims flowing, against real processes: the workers
 * talk to the execution service through an HTTP/2 proxy that can hold
 * back ReportOutcome's answers (the service has committed the outcome;
 * the worker hears late, as over a slow link). A slow report holds back
 * neither the next claim nor the next job; one claim brings several jobs
 * that run at once; prefetched jobs wait with renewed leases and start
 * without another claim; drain answers every report before it resolves;
 * a prefetched job that never started is left to lease expiry. Leases are
 * 2 s. Every test has its own queue and worker name. The proxy holds back
 * whole answers of unary calls, so these workers make unary calls
 * (`workSession: false`); the pipeline under test is the same on the
 * worker session.
 */

const LEASE_MS = 2_000;

let cluster: DocketServices;
let proxy: DelayingProxy;
let admission: Client<typeof AdmissionService>;
let events: Client<typeof EventService>;
let workerToken: string;

beforeAll(async () => {
  cluster = await startInProcessCluster({
    databaseUrl: await createMigratedTestDatabase('worker sdk claim flow'),
    env: { state: { DOCKET_LEASE_MS: String(LEASE_MS) } },
  });
  proxy = await startDelayingProxy(cluster.execution.url);
  const ownerToken = await cluster.tokenFor('flow-owner', 'user');
  admission = clientFor(AdmissionService, cluster.admission.url, ownerToken);
  events = clientFor(EventService, cluster.events.url, ownerToken);
  workerToken = await cluster.tokenFor('flow-worker', 'worker');
});

afterEach(async () => {
  await stopSdkWorkers();
  proxy.delay('ReportOutcome', 0);
});

afterAll(async () => {
  await proxy?.close();
  await stopInProcessClusters();
});

/** A started worker on `queue` that reaches the execution service through the proxy. */
function startWorker(queue: string, handler: JobHandler, options: Partial<WorkerOptions> = {}): Promise<Worker> {
  return startSdkWorker({ url: proxy.url, token: workerToken, name: `flow-${queue}`, queues: [queue], concurrency: 2, claimWaitMs: 5_000, workSession: false, handler, ...options });
}

/** Admits `count` jobs on `queue`, one after another; their ids in order. */
async function submitJobs(queue: string, count: number): Promise<string[]> {
  const jobIds: string[] = [];
  for (let i = 0; i < count; i++) {
    const response = await admission.submitJob({
      idempotencyKey: newIdempotencyKey(queue),
      queue,
      input: { index: i },
      retryPolicy: { maxAttempts: 3, initialBackoff: durationFromMs(50), maxBackoff: durationFromMs(100) },
    });
    jobIds.push(response.job!.id);
  }
  return jobIds;
}

async function jobsOf(jobIds: readonly string[]) {
  return Promise.all(jobIds.map(async (jobId) => (await admission.getJob({ jobId })).job!));
}

async function allSucceeded(jobIds: readonly string[]): Promise<boolean> {
  return (await jobsOf(jobIds)).every((job) => job.status === JobStatus.SUCCEEDED);
}

/** Polls `check` every 20 ms until it holds; fails the test after `timeoutMs`. */
async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('still not so after the timeout');
    // Real time: the poll interval of this wait.
    await delay(20);
  }
}

/** The calls of `method` the proxy saw from index `from` on. */
function callsOf(method: string, from: number): ProxiedCall[] {
  return proxy.calls.slice(from).filter((call) => call.method === method);
}

/** The most calls that were open at one time, each from its request until its answer was released. */
function mostAtOnce(calls: readonly ProxiedCall[]): number {
  const edges = calls.flatMap((call) => [
    { at: call.sentAt, step: 1 },
    { at: call.releasedAt ?? Number.POSITIVE_INFINITY, step: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.step - b.step);
  let open = 0;
  let most = 0;
  for (const edge of edges) most = Math.max(most, (open += edge.step));
  return most;
}

describe('the worker SDK keeps claims flowing (real cluster, through an HTTP/2 proxy)', () => {
  it('a slow ReportOutcome holds back neither the next claim nor the next job, and reports in flight stay within the concurrency', async () => {
    // Real time: a deliberately slow ReportOutcome, answered 1.5 s late by the proxy.
    proxy.delay('ReportOutcome', 1_500);
    const jobIds = await submitJobs('flow-slow-report', 6);
    const from = proxy.calls.length;
    const started: number[] = [];
    const worker = await startWorker(
      'flow-slow-report',
      async () => {
        started.push(performance.now());
        // Real time: the handler's work takes a little time.
        await delay(50);
        return {};
      },
      { concurrency: 2 },
    );
    await eventually(async () => worker.running === 0 && (await allSucceeded(jobIds)));

    const reports = callsOf('ReportOutcome', from);
    expect(reports).toHaveLength(6); // one try each: the held answers were not retried
    const firstAnswer = Math.min(...reports.map((call) => call.releasedAt!));
    // Two jobs ran and reported; their slots freed at once, a claim went out and two more jobs ran, all before
    // any report was answered. Those two then kept their slots (both report slots taken), so no third pair started.
    expect(started.filter((at) => at < firstAnswer)).toHaveLength(4);
    expect(callsOf('ClaimJobs', from).some((call) => call.sentAt > reports[0]!.sentAt && call.sentAt < firstAnswer)).toBe(true);
    expect(worker.stats.maxRunning).toBe(2);
    expect(worker.stats.maxReportsInFlight).toBe(2);
    expect(mostAtOnce(reports)).toBe(2); // as the proxy saw them: from the request to the release of its answer
  });

  it('one ClaimJobs returns several assignments and they all run at once; claimBatchSize caps a claim', async () => {
    const runTogether = async (queue: string, options: Partial<WorkerOptions>, jobs: number) => {
      const jobIds = await submitJobs(queue, jobs);
      let running = 0;
      let claimCallsWhenAllRan: number | undefined;
      let worker: Worker | undefined;
      worker = await startWorker(
        queue,
        async () => {
          running += 1;
          if (running === jobs) claimCallsWhenAllRan = worker!.stats.claimCalls;
          await eventually(() => claimCallsWhenAllRan !== undefined, 5_000);
          return {};
        },
        options,
      );
      await eventually(() => allSucceeded(jobIds));
      return { claimCallsWhenAllRan, maxRunning: worker.stats.maxRunning };
    };
    expect(await runTogether('flow-batch', { concurrency: 5 }, 5)).toEqual({ claimCallsWhenAllRan: 1, maxRunning: 5 });
    expect(await runTogether('flow-batch-capped', { concurrency: 4, claimBatchSize: 2 }, 4)).toEqual({ claimCallsWhenAllRan: 2, maxRunning: 4 });
  });

  it('with prefetch, claimed jobs wait with their leases renewed and start as a slot frees, without another claim', async () => {
    const jobIds = await submitJobs('flow-prefetch', 3);
    const claimCallsAtStart: number[] = [];
    let worker: Worker | undefined;
    worker = await startWorker(
      'flow-prefetch',
      async () => {
        claimCallsAtStart.push(worker!.stats.claimCalls);
        // Real time: the prefetched jobs must wait longer than their real 2 s lease (renewed meanwhile).
        await delay(1_500);
        return {};
      },
      { concurrency: 1, prefetch: 2 },
    );
    await eventually(() => allSucceeded(jobIds));
    expect(claimCallsAtStart).toEqual([1, 1, 1]);
    expect(worker.stats).toMatchObject({ claimed: 3, maxRunning: 1, maxPrefetched: 2 });
    // The last job waited about 3 s, longer than its 2 s lease: renewed while it waited, it kept its one attempt.
    const jobs = await jobsOf(jobIds);
    expect(jobs.map((job) => job.attemptCount)).toEqual([1, 1, 1]);
    const page = await events.readJobEvents({ jobId: jobIds[2]!, afterSequence: 0n, pageSize: 256 });
    expect(page.events.map((event) => event.type)).not.toContain('attempt.lost');
  });

  it('drain claims nothing new, still starts a prefetched job, and resolves only after every outcome report is answered', async () => {
    // Real time: a deliberately slow ReportOutcome, answered 1 s late by the proxy.
    proxy.delay('ReportOutcome', 1_000);
    const jobIds = await submitJobs('flow-drain', 2);
    const from = proxy.calls.length;
    const worker = await startWorker(
      'flow-drain',
      async () => {
        // Real time: the handler is still running when the drain begins.
        await delay(300);
        return { finished: true };
      },
      { concurrency: 1, prefetch: 1 },
    );
    await eventually(() => worker.handlersRunning === 1 && worker.prefetched === 1);
    const drained = worker.drain();
    const late = await submitJobs('flow-drain', 1);
    await drained;
    const drainedAt = performance.now();
    expect(await worker.done).toMatchObject({ reason: 'drained', abandoned: 0 });
    const reports = callsOf('ReportOutcome', from);
    expect(reports).toHaveLength(2);
    expect(reports.every((call) => call.releasedAt !== undefined && call.releasedAt < drainedAt)).toBe(true);
    expect(await allSucceeded(jobIds)).toBe(true);
    // Real time: a negative assertion: a claim the drained worker had in flight would have taken the late job by now.
    await delay(300);
    expect((await jobsOf(late))[0]?.status).toBe(JobStatus.QUEUED);
  });

  it('stop() leaves a prefetched job that never started to lease expiry; it costs one attempt and then runs elsewhere', async () => {
    const [first, second] = await submitJobs('flow-stop', 2);
    const ran: string[] = [];
    const worker = await startWorker(
      'flow-stop',
      async (job) => {
        ran.push(job.jobId);
        // Real time: the handler is still running, with one job prefetched, when the worker is stopped.
        await delay(300);
        return {};
      },
      { concurrency: 1, prefetch: 1 },
    );
    await eventually(() => worker.handlersRunning === 1 && worker.prefetched === 1);
    await worker.stop();
    expect(ran).toEqual([first]);
    const [stopped] = await jobsOf([second!]);
    expect(stopped?.status).toBe(JobStatus.RUNNING); // still leased to the stopped worker: nothing gives it back

    const rescuer = await startWorker('flow-stop', (job) => ({ attempt: job.attemptNumber }), { name: 'flow-stop-rescuer' });
    await eventually(() => allSucceeded([first!, second!]));
    const [rescued] = await jobsOf([second!]);
    expect(rescued?.result).toEqual({ attempt: 2 });
    const page = await events.readJobEvents({ jobId: second!, afterSequence: 0n, pageSize: 256 });
    expect(page.events.map((event) => event.type)).toContain('attempt.lost');
    expect(rescuer.stats.claimed).toBe(1);
  });
});

import { durationFromMs } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ApprovalDecision } from '@docket/proto/docket/common/v1/approval_pb.js';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { retryableFailure, type JobHandler, type JobSignal } from '@docket/worker-sdk';
import { clientFor } from './support/clients.js';
import type { DocketServices } from './support/docket-services.js';
import { startInProcessCluster, stopInProcessClusters } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { readWholeJournal } from './support/job-writer.js';
import { newIdempotencyKey } from './support/keys.js';
import { freshQueue } from './support/raw-worker-harness.js';
import { startSdkWorker, stopSdkWorkers } from './support/sdk-workers.js';

/*
 * The worker SDK's human-in-the-loop helpers on a real cluster: a handler
 * asks for approval (its attempt ends, the job waits PAUSED), the owner
 * allows it, the next attempt sees the granted approval, takes a signal
 * the owner sends, and commits an effect exactly once, also when its first
 * try at committing failed and a retry resumed it.
 */

const OWNER = 'loop-owner';

let cluster: DocketServices;
let admission: Client<typeof AdmissionService>;
let ownerToken: string;
let workerToken: string;

beforeAll(async () => {
  cluster = await startInProcessCluster({
    databaseUrl: await createMigratedTestDatabase('worker sdk human loop'),
    env: { state: { DOCKET_LEASE_MS: '2000' }, execution: { DOCKET_RETRY_INTERVAL_MS: '100' } },
  });
  ownerToken = await cluster.tokenFor(OWNER, 'user');
  admission = clientFor(AdmissionService, cluster.admission.url, ownerToken);
  workerToken = await cluster.tokenFor('loop-worker', 'worker');
});

afterEach(stopSdkWorkers);

afterAll(stopInProcessClusters);

async function startWorker(queue: string, handler: JobHandler): Promise<void> {
  await startSdkWorker({ url: cluster.execution.url, token: workerToken, name: `loop-${queue}`, queues: [queue], concurrency: 1, claimWaitMs: 5_000, signalPollMs: 100, handler });
}

/** Polls GetJob every 25 ms until `accept` holds; fails after `timeoutMs`. */
async function waitFor(jobId: string, accept: (job: Job) => boolean, timeoutMs = 15_000): Promise<Job> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const { job } = await admission.getJob({ jobId });
    if (job && accept(job)) return job;
    if (performance.now() > deadline) throw new Error(`job ${jobId} is ${job ? JobStatus[job.status] : 'missing'}`);
    // Real time: the poll interval of this wait.
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('approvals, signals and effects through the SDK', () => {
  it('asks for approval, resumes after ALLOW, takes a signal and commits an effect once', async () => {
    const queue = freshQueue('loop');
    const taken: JobSignal[] = [];
    const charges = new Map<string, number>();
    const attempts: { attempt: number; granted: boolean }[] = [];
    await startWorker(queue, async (job) => {
      const granted = job.lastApproval?.decision === 'ALLOW' && job.lastApproval.details['step'] === 'charge';
      attempts.push({ attempt: job.attemptNumber, granted });
      if (!granted) {
        await job.saveCheckpoint({ stage: 'asked' });
        return job.requestApproval('Charge 5 units?', { step: 'charge', amount: 5 });
      }
      for await (const signal of job.signals) {
        taken.push(signal);
        if (signal.name === 'go') break;
      }
      const charged = await job.effect('payment.capture', `charge-${job.jobId}`, { amount: 5 }, {
        sign: ({ key }) => {
          charges.set(key, (charges.get(key) ?? 0) + 1);
          return `ch_${charges.size}`;
        },
        commit: () => undefined,
      });
      return { external_id: charged.externalId, from: job.checkpoint?.['stage'] ?? null };
    });

    const { job: submitted } = await admission.submitJob({ idempotencyKey: newIdempotencyKey('loop'), queue, input: {} });
    const jobId = submitted!.id;
    const paused = await waitFor(jobId, (job) => job.pendingApproval !== undefined);
    expect(paused.status).toBe(JobStatus.PAUSED);
    expect(paused.pendingApproval).toMatchObject({ prompt: 'Charge 5 units?', details: { step: 'charge', amount: 5 } });

    await admission.decideApproval({ idempotencyKey: newIdempotencyKey('allow'), jobId, approvalId: paused.pendingApproval!.approvalId, decision: ApprovalDecision.ALLOW });
    await waitFor(jobId, (job) => job.status === JobStatus.RUNNING && job.attemptCount === 2);
    await admission.sendSignal({ idempotencyKey: newIdempotencyKey('hello'), jobId, name: 'hello', payload: { n: 1 } });
    await admission.sendSignal({ idempotencyKey: newIdempotencyKey('go'), jobId, name: 'go', payload: {} });
    const done = await waitFor(jobId, (job) => job.status === JobStatus.SUCCEEDED);

    expect(attempts).toEqual([{ attempt: 1, granted: false }, { attempt: 2, granted: true }]);
    expect(taken.map((signal) => [signal.sequence, signal.name, signal.redelivered])).toEqual([[1n, 'hello', false], [2n, 'go', false]]);
    expect(done.result).toEqual({ external_id: 'ch_1', from: 'asked' });
    expect([...charges.values()]).toEqual([1]);
    expect(done.unresolvedSignals).toBe(0);
    const types = (await readWholeJournal(cluster.events.url, ownerToken, jobId)).map((event) => event.type);
    for (const type of ['approval.requested', 'approval.decided', 'signal.received', 'signal.delivered', 'signal.acknowledged', 'effect.prepared', 'effect.signed', 'effect.committed', 'job.succeeded']) {
      expect(types).toContain(type);
    }
    expect(types.indexOf('approval.decided')).toBeLessThan(types.indexOf('effect.prepared'));
  });

  it('a retry resumes an effect whose commit failed, without signing it again', async () => {
    const queue = freshQueue('resume');
    const signs: string[] = [];
    let commits = 0;
    await startWorker(queue, async (job) => {
      const result = await job.effect('email.send', `mail-${job.jobId}`, { to: 'ops' }, {
        sign: ({ key }) => {
          signs.push(key);
          return 'msg-1';
        },
        commit: ({ externalId }) => {
          commits += 1;
          if (job.attemptNumber === 1) throw retryableFailure('TRANSIENT', 'the mail relay timed out');
          expect(externalId).toBe('msg-1');
        },
      });
      return { id: result.externalId, resumed: result.resumed };
    });
    const { job: submitted } = await admission.submitJob({
      idempotencyKey: newIdempotencyKey('resume'),
      queue,
      input: {},
      retryPolicy: { maxAttempts: 3, initialBackoff: durationFromMs(1), maxBackoff: durationFromMs(1) },
    });
    const done = await waitFor(submitted!.id, (job) => job.status === JobStatus.SUCCEEDED);
    expect(done.result).toEqual({ id: 'msg-1', resumed: true });
    expect(signs).toHaveLength(1);
    expect(commits).toBe(2);
    const events = clientFor(EventService, cluster.events.url, ownerToken);
    const { events: journal } = await events.readJobEvents({ jobId: submitted!.id, afterSequence: 0n, pageSize: 0 });
    expect(journal.filter((event) => event.type.startsWith('effect.')).map((event) => event.type)).toEqual([
      'effect.prepared',
      'effect.signed',
      'effect.recoverable',
      'effect.resumed',
      'effect.committed',
    ]);
  });
});

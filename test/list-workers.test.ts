import { setTimeout as sleep } from 'node:timers/promises';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService, ExplainCode, WorkerState, type Worker } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { clientFor, failureOf } from './support/clients.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';
import { newOperationId } from './support/raw-worker.js';
import { runDocket } from './support/docket-cli.js';

/*
 * ListWorkers (SPEC section 14, admin role): every registration of a
 * worker name, newest first, with its queues, capacity, running attempts,
 * when it registered and was last seen, and whether it is LIVE, EXPIRED or
 * SUPERSEDED. The lease is short here so that a silent worker expires
 * within the test.
 */

const LEASE_MS = 2_000;

let harness: ExecutionHarness;
let admin: Client<typeof AdmissionService>;
let execution: Client<typeof ExecutionService>;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'workers-owner', {
    databaseUrl: await createMigratedTestDatabase('list workers'),
    env: { state: { DOCKET_LEASE_MS: String(LEASE_MS) } },
  });
  admin = await harness.queueAdmin();
  execution = harness.executionClient();
});

afterAll(() => harness?.close());

async function workersOf(queue: string): Promise<Worker[]> {
  return (await admin.listWorkers({ queue })).workers;
}

async function register(name: string, queues: string[], maxConcurrency = 2): Promise<string> {
  return (await execution.registerWorker({ workerName: name, queues, maxConcurrency })).workerIncarnation;
}

describe('ListWorkers', () => {
  it('shows a registration LIVE with its queues, capacity, subject and running attempts, and a later registration of its name superseding it', async () => {
    const queue = freshQueue('workers-live');
    const first = await register(`w-${queue}`, [queue, 'elsewhere'], 3);
    const [listed] = await workersOf(queue);
    expect(listed).toMatchObject({
      workerName: `w-${queue}`,
      workerIncarnation: first,
      generation: 1n,
      queues: [queue, 'elsewhere'],
      maxConcurrency: 3,
      runningAttempts: 0,
      state: WorkerState.LIVE,
      subject: `worker-${harness.owner}`,
    });

    await harness.submit({ queue });
    const { assignments } = await execution.claimJobs({ workerIncarnation: first, queues: [queue], maxJobs: 1, operationId: newOperationId() });
    expect(assignments).toHaveLength(1);
    expect((await workersOf(queue))[0]).toMatchObject({ workerIncarnation: first, runningAttempts: 1 });

    const second = await register(`w-${queue}`, [queue]);
    const [newest, older] = await workersOf(queue);
    expect(newest).toMatchObject({ workerIncarnation: second, generation: 2n, state: WorkerState.LIVE, runningAttempts: 0 });
    // Superseding settles what the old incarnation held.
    expect(older).toMatchObject({ workerIncarnation: first, state: WorkerState.SUPERSEDED, runningAttempts: 0 });
  });

  it('shows a worker EXPIRED once it is silent for a lease, ExplainJob says no live worker serves its queue, and a claim makes it LIVE again', async () => {
    const queue = freshQueue('workers-silent');
    const incarnation = await register(`w-${queue}`, [queue]);
    const job = await harness.submit({ queue, runAfter: timestampFromDate(new Date(Date.now() + 3_600_000)) });
    expect((await harness.admission.explainJob({ jobId: job.id })).reasons.map((reason) => reason.code)).toEqual([ExplainCode.RUN_AFTER]);
    const registeredAt = timestampDate((await workersOf(queue))[0]!.registeredAt!);

    // Real time: liveness is judged by the database clock against the lease; the worker must stay silent longer than it.
    await sleep(LEASE_MS + 500);
    expect((await workersOf(queue))[0]).toMatchObject({ workerIncarnation: incarnation, state: WorkerState.EXPIRED });
    expect((await harness.admission.explainJob({ jobId: job.id })).reasons.map((reason) => reason.code)).toEqual([ExplainCode.RUN_AFTER, ExplainCode.NO_LIVE_WORKER]);

    // An empty claim is a sign of life too.
    await execution.claimJobs({ workerIncarnation: incarnation, queues: [queue], maxJobs: 1, operationId: newOperationId() });
    const [seen] = await workersOf(queue);
    expect(seen).toMatchObject({ state: WorkerState.LIVE });
    expect(timestampDate(seen!.lastSeenAt!).getTime()).toBeGreaterThan(registeredAt.getTime() + LEASE_MS);
  });

  it('pages newest first with tokens bound to the caller and the queue filter', async () => {
    const queue = freshQueue('workers-pages');
    const registered = [];
    for (let index = 0; index < 5; index += 1) registered.push(await register(`w-${queue}-${index}`, [queue]));
    const seen: string[] = [];
    let pageToken = '';
    do {
      const page = await admin.listWorkers({ queue, pageSize: 2, pageToken });
      expect(page.workers.length).toBeLessThanOrEqual(2);
      seen.push(...page.workers.map((worker) => worker.workerIncarnation));
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
    expect(seen).toEqual([...registered].reverse());

    const { nextPageToken } = await admin.listWorkers({ queue, pageSize: 1 });
    const otherQueue = await failureOf(admin.listWorkers({ queue: 'elsewhere', pageSize: 1, pageToken: nextPageToken }));
    expect(otherQueue).toMatchObject({ code: Code.InvalidArgument, reason: 'CURSOR_INVALID' });
    const otherAdmin = clientFor(AdmissionService, harness.cluster.admission.url, await harness.cluster.tokenFor('another-admin', 'admin'));
    expect(await failureOf(otherAdmin.listWorkers({ queue, pageSize: 1, pageToken: nextPageToken }))).toMatchObject({ reason: 'CURSOR_INVALID' });
  });

  it('is for admins only, and refuses a malformed queue naming the field', async () => {
    expect(await failureOf(harness.admission.listWorkers({}))).toMatchObject({ code: Code.PermissionDenied });
    expect(await failureOf(admin.listWorkers({ queue: 'Not A Queue' }))).toMatchObject({
      code: Code.InvalidArgument,
      reason: 'INVALID_FIELD',
      violations: [{ field: 'queue', description: expect.any(String) }],
    });
  });
});

describe('docket workers', () => {
  it('prints one line per registration of the queue\'s workers, newest first, and is refused for a user', async () => {
    const queue = freshQueue('cli-workers');
    const first = await register(`cli-${queue}`, [queue], 4);
    const second = await register(`cli-${queue}`, [queue], 4);
    const url = ['--url', harness.cluster.admission.url];
    const env = { DOCKET_TOKEN: await harness.cluster.tokenFor('workers-cli-admin', 'admin') };
    const listed = await runDocket(['workers', '--queue', queue, ...url], env);
    expect(listed.code).toBe(0);
    const time = '\\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z';
    expect(listed.stdout).toMatch(
      new RegExp(
        `^cli-${queue} gen 2 LIVE ${second} running 0/4 queues ${queue} last seen ${time}\n` +
          `cli-${queue} gen 1 SUPERSEDED ${first} running 0/4 queues ${queue} last seen ${time}\n$`,
      ),
    );
    const refused = await runDocket(['workers', ...url], { DOCKET_TOKEN: harness.ownerToken });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('permission_denied');
  });
});

import { setTimeout as sleep } from 'node:timers/promises';
import { durationFromMs, timestampFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient, type Client, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceEnvironment } from '@docket/cli';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { ExecutionService, type Assignment } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { startService, stopAll, type ServiceProcess } from './support/cluster.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId } from './support/raw-worker.js';

/*
 * ClaimJobs (SPEC section 5) on real processes: two state replicas, two
 * execution replicas. Claims never hand one job to two attempts, respect
 * per-queue and per-incarnation limits, priorities and run_after, survive
 * a lost response through the operation id, and a waiting claim wakes on
 * the change stream as soon as work is admitted.
 */

const WORKERS = 20;
const WORKER_CONCURRENCY = 4;
const BULK_JOBS = 1_800;
const LIMITED_JOBS = 200;
const QUEUE_LIMIT = 3;

let harness: ExecutionHarness;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'claims-owner', {
    databaseUrl: await createMigratedTestDatabase('execution claims'),
    replicas: { state: 2, execution: 2 },
  });
});

afterAll(async () => {
  await harness?.close();
  await stopAll();
});

/** An in-process worker client on execution replica `replica`, with its own HTTP/2 connection. */
function executionClient(replica: number | ServiceProcess, interceptors: Interceptor[] = []): Client<typeof ExecutionService> {
  const service = typeof replica === 'number' ? harness.cluster.replicas.execution[replica]! : replica;
  const bearer: Interceptor = (next) => (request) => {
    request.header.set('authorization', `Bearer ${harness.workerToken}`);
    return next(request);
  };
  return createClient(ExecutionService, createGrpcTransport({ baseUrl: service.url, interceptors: [bearer, ...interceptors] }));
}

async function register(client: Client<typeof ExecutionService>, name: string, queues: string[], maxConcurrency: number): Promise<string> {
  return (await client.registerWorker({ workerName: name, queues, maxConcurrency })).workerIncarnation;
}

async function submitMany(count: number, make: (index: number) => Parameters<ExecutionHarness['submit']>[0]) {
  const jobs = new Array<Awaited<ReturnType<ExecutionHarness['submit']>>>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < count) {
        const index = next++;
        jobs[index] = await harness.submit(make(index));
      }
    }),
  );
  return jobs;
}

describe('20 workers on 2 execution replicas claiming 2,000 jobs', () => {
  it(
    'hand every job to exactly one attempt, never exceed a queue limit, and honour priorities',
    async () => {
      const bulk = freshQueue('bulk');
      const limited = freshQueue('limited');
      await harness.limitQueue(limited, QUEUE_LIMIT);
      const priorities = [0, 5, 10];
      const bulkJobs = await submitMany(BULK_JOBS, (index) => ({ queue: bulk, priority: priorities[index % 3]!, input: { index } }));
      await submitMany(LIMITED_JOBS, (index) => ({ queue: limited, input: { index } }));

      const holders = new Map<string, string>();
      const doubleClaims: string[] = [];
      const claimOrder: string[] = [];
      // The limited queue's ACTIVE attempts, counted throughout the run (not
      // only after claims) on a connection of its own: each count is one
      // consistent snapshot, so a count above the limit is a real breach.
      const limitedActive = { polls: 0, most: 0 };
      let claiming = true;
      const watchLimited = (async () => {
        while (claiming) {
          const { rows } = await harness.sql.query<{ active: number }>(
            `select count(*)::int as active from attempts where queue = $1 and status = 'ACTIVE'`,
            [limited],
          );
          limitedActive.polls += 1;
          limitedActive.most = Math.max(limitedActive.most, rows[0]!.active);
          // Real time: the sampling interval of this background sampler.
          await sleep(1);
        }
      })();
      let completed = 0;
      const total = BULK_JOBS + LIMITED_JOBS;

      const runWorker = async (index: number): Promise<void> => {
        const client = executionClient(index % 2);
        const incarnation = await register(client, `claimer-${index}`, [bulk, limited], WORKER_CONCURRENCY);
        while (completed < total) {
          const { assignments } = await client.claimJobs({
            workerIncarnation: incarnation,
            maxJobs: WORKER_CONCURRENCY,
            wait: durationFromMs(1_000),
            operationId: newOperationId(),
          });
          expect(assignments.length).toBeLessThanOrEqual(WORKER_CONCURRENCY);
          for (const assignment of assignments) {
            const jobId = assignment.envelope!.jobId;
            if (holders.has(jobId)) doubleClaims.push(jobId);
            holders.set(jobId, incarnation);
            claimOrder.push(jobId);
          }
          await Promise.all(
            assignments.map(async (assignment) => {
              // Real time: handlers of uneven length, so that completions and claims interleave.
              await sleep(Math.floor(Math.random() * 3));
              const { job } = await client.reportOutcome({
                attempt: attemptOf(assignment),
                operationId: newOperationId(),
                outcome: { case: 'success', value: { result: {} } },
              });
              expect(job?.id).toBe(assignment.envelope!.jobId);
              holders.delete(assignment.envelope!.jobId);
              completed += 1;
            }),
          );
        }
      };
      try {
        await Promise.all(Array.from({ length: WORKERS }, (_, index) => runWorker(index)));
      } finally {
        claiming = false;
        await watchLimited;
      }

      // Every job claimed once, by one attempt, and finished.
      expect(doubleClaims).toEqual([]);
      expect(claimOrder).toHaveLength(total);
      expect(new Set(claimOrder).size).toBe(total);
      const { rows: attemptCounts } = await harness.sql.query<{ attempts: number; jobs: string; statuses: string[] }>(
        `select a.attempts, count(*) as jobs, array_agg(distinct a.status) as statuses
           from (select job_id, count(*)::int as attempts, max(status) as status from attempts
                  where queue = any($1) group by job_id) a
          group by a.attempts`,
        [[bulk, limited]],
      );
      expect(attemptCounts).toEqual([{ attempts: 1, jobs: String(total), statuses: ['SUCCEEDED'] }]);
      const { rows: statuses } = await harness.sql.query('select status, count(*) from jobs where queue = any($1) group by status', [[bulk, limited]]);
      expect(statuses).toEqual([{ status: 'SUCCEEDED', count: String(total) }]);

      // The queue limit held at every one of thousands of counts taken while
      // claims ran, and was reached.
      expect(limitedActive.polls).toBeGreaterThan(1_000);
      expect(limitedActive.most).toBe(QUEUE_LIMIT);

      // Priorities (higher first), then age: with WORKERS * WORKER_CONCURRENCY
      // claims in flight at once, a job may be overtaken by at most that many
      // that should have come after it, never by more.
      const window = WORKERS * WORKER_CONCURRENCY;
      const rank = new Map(
        [...bulkJobs]
          .sort((a, b) => b.priority - a.priority || timestampMs(a.createdAt!) - timestampMs(b.createdAt!) || a.id.localeCompare(b.id))
          .map((job, index) => [job.id, index]),
      );
      const bulkOrder = claimOrder.filter((id) => rank.has(id)).map((id) => rank.get(id)!);
      let worstOvertake = 0;
      for (let position = 0; position < bulkOrder.length; position += 1) {
        for (let later = position + 1; later < bulkOrder.length; later += 1) {
          if (bulkOrder[later]! < bulkOrder[position]!) worstOvertake = Math.max(worstOvertake, later - position);
        }
      }
      expect(worstOvertake).toBeLessThanOrEqual(window);
    },
    240_000,
  );
});

describe('a claim', () => {
  /** An execution replica whose safety re-check is a minute away, on state replica 1 (admission uses replica 0). */
  let slowRecheck: ServiceProcess;

  beforeAll(async () => {
    const { secret: authSecret, cursorSecret, serviceAuthSecret, databaseUrl } = harness.cluster;
    const settings = { authSecret, cursorSecret, serviceAuthSecret, databaseUrl };
    slowRecheck = await startService('execution', {
      ...serviceEnvironment('execution', settings, '127.0.0.1:0', harness.cluster.replicas.state[1]!.url),
      DOCKET_CLAIM_RECHECK_MS: '60000',
      DOCKET_BACKGROUND_LOOPS: 'off',
    });
  });

  it('hands out the highest priority first, then the oldest, exactly', async () => {
    const queue = freshQueue('priority');
    const priorities = [1, 5, 5, 3, 9, 1, 5];
    const jobs: Job[] = [];
    for (const [index, priority] of priorities.entries()) jobs.push(await harness.submit({ queue, priority, input: { index } }));
    const client = executionClient(0);
    const incarnation = await register(client, 'priority-claimer', [queue], 10);
    const claim = async (maxJobs: number) =>
      (await client.claimJobs({ workerIncarnation: incarnation, maxJobs, operationId: newOperationId() })).assignments.map(
        (assignment) => assignment.envelope!.jobId,
      );
    const byIndex = (...indexes: number[]) => indexes.map((index) => jobs[index]!.id);
    expect(await claim(3)).toEqual(byIndex(4, 1, 2));
    expect(await claim(10)).toEqual(byIndex(6, 3, 0, 5));
  });

  it("never gives an incarnation more than its own max_concurrency", async () => {
    const queue = freshQueue('own-limit');
    for (let index = 0; index < 5; index += 1) await harness.submit({ queue, input: { index } });
    const client = executionClient(1);
    const incarnation = await register(client, 'own-limit', [queue], 2);
    const claim = () => client.claimJobs({ workerIncarnation: incarnation, maxJobs: 10, operationId: newOperationId() });
    const first = await claim();
    expect(first.assignments).toHaveLength(2);
    expect((await claim()).assignments).toHaveLength(0);
    await client.reportOutcome({ attempt: attemptOf(first.assignments[0]!), operationId: newOperationId(), outcome: { case: 'success', value: {} } });
    expect((await claim()).assignments).toHaveLength(1);
  });

  it('whose response is lost after the server committed is recovered by replaying its operation id: same attempt, no second one', async () => {
    const queue = freshQueue('lost-response');
    const job = await harness.submit({ queue });
    const incarnation = await register(executionClient(0), 'lost-response', [queue], 5);
    // The server commits and answers; the answer never reaches the worker.
    let committedAnswer: Assignment[] | undefined;
    const loseTheAnswer: Interceptor = (next) => async (request) => {
      const response = await next(request);
      if (!response.stream) committedAnswer = (response.message as { assignments?: Assignment[] }).assignments;
      throw new ConnectError('connection reset', Code.Unavailable);
    };
    const request = { workerIncarnation: incarnation, maxJobs: 5, operationId: newOperationId() };
    await expect(executionClient(0, [loseTheAnswer]).claimJobs(request)).rejects.toMatchObject({ code: Code.Unavailable });
    expect(committedAnswer).toHaveLength(1);
    const before = await harness.attempts(job.id);
    expect(before.map((attempt) => attempt.status)).toEqual(['ACTIVE']);

    const replayed = await executionClient(1).claimJobs(request);
    expect(replayed.assignments).toHaveLength(1);
    expect(replayed.assignments[0]!.authority).toEqual(committedAnswer![0]!.authority);
    expect(replayed.assignments[0]!.envelope!.jobId).toBe(job.id);
    expect(await harness.attempts(job.id)).toEqual(before);
    const row = await harness.jobRow(job.id);
    expect({ fence: row.fence, attempts: row.attempt_count }).toEqual({ fence: '1', attempts: 1 });
    expect((await harness.eventTypes(job.id)).filter((type) => type === 'attempt.started')).toHaveLength(1);
    // A new claim finds nothing: the job is held by the recovered attempt.
    expect((await executionClient(0).claimJobs({ ...request, operationId: newOperationId() })).assignments).toEqual([]);
  });

  it('does not take a job before its run_after, and takes it when run_after passes, woken by the state service\'s hint', async () => {
    const queue = freshQueue('run-after');
    const runAfterMs = Date.now() + 1_500;
    const job = await harness.submit({ queue, runAfter: timestampFromMs(runAfterMs) });
    const client = executionClient(slowRecheck);
    const incarnation = await register(client, 'run-after', [queue], 1);
    const early = await client.claimJobs({ workerIncarnation: incarnation, maxJobs: 1, operationId: newOperationId() });
    expect(early.assignments).toEqual([]);
    // No commit happens when run_after passes, and this replica's re-check
    // is a minute away: the claim wakes at the next_claimable_at the state
    // service named with its empty answer.
    const waited = await client.claimJobs({ workerIncarnation: incarnation, maxJobs: 1, wait: durationFromMs(20_000), operationId: newOperationId() });
    const answeredAt = Date.now();
    expect(waited.assignments.map((assignment) => assignment.envelope!.jobId)).toEqual([job.id]);
    const [attempt] = await harness.attempts(job.id);
    expect(attempt!.started_at.getTime()).toBeGreaterThanOrEqual(runAfterMs);
    // Woken by the hint, not by the end of its 20 s wait (or the re-check a
    // minute away), however busy the machine. How soon after run_after it
    // wakes is measured by `npm run bench -- --only wakeups`.
    expect(answeredAt - runAfterMs).toBeLessThan(10_000);
  });

  it('that is waiting wakes on the change stream as soon as a job is admitted, not on its re-check timer', async () => {
    // The replica's re-check is a minute away and it talks to the other
    // state replica than the admission service: only a WatchChanges tick,
    // carried across state replicas by Postgres NOTIFY, can wake it in time.
    const queue = freshQueue('wake');
    const client = executionClient(slowRecheck);
    const incarnation = await register(client, 'waker', [queue], 1);
    const waits: number[] = [];
    for (let round = 0; round < 3; round += 1) {
      const claimStartedAt = performance.now();
      const claiming = client.claimJobs({ workerIncarnation: incarnation, maxJobs: 1, wait: durationFromMs(20_000), operationId: newOperationId() });
      // Real time: nothing outside the execution service shows that a claim has begun to wait; give it time to.
      await sleep(300);
      const job = await harness.submit({ queue, input: { round } });
      const { assignments } = await claiming;
      waits.push(performance.now() - claimStartedAt);
      expect(assignments.map((assignment) => assignment.envelope!.jobId)).toEqual([job.id]);
      await client.reportOutcome({ attempt: attemptOf(assignments[0]!), operationId: newOperationId(), outcome: { case: 'success', value: {} } });
    }
    // Each claim was answered with the job, well before its 20 s wait ran
    // out (and the minute's re-check), however busy the machine. The
    // admission-to-claim latency is measured by `npm run bench -- --only wakeups`.
    expect(waits).toHaveLength(3);
    expect(Math.max(...waits)).toBeLessThan(10_000);
  });

  it('that waits in vain answers with no assignments when its wait is over', async () => {
    const queue = freshQueue('empty');
    const client = harness.executionClient();
    const incarnation = await register(client, 'idle', [queue], 1);
    const started = performance.now();
    const { assignments } = await client.claimJobs({ workerIncarnation: incarnation, maxJobs: 1, wait: durationFromMs(700), operationId: newOperationId() });
    const elapsed = performance.now() - started;
    expect(assignments).toEqual([]);
    expect(elapsed).toBeGreaterThanOrEqual(650);
    expect(elapsed).toBeLessThan(3_000);
  });
});

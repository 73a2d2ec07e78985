import { Code } from '@connectrpc/connect';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { Assignment } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { LOST_ATTEMPT_RETRIED_JOURNAL } from './support/lost-attempt-journal.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId, type AttemptRefInit, type RawAnswer, type RawWorker } from './support/raw-worker.js';

/*
 * The zombie worker (SPEC section 5): a worker process that is frozen past
 * its lease (SIGSTOP: a GC pause, a VM migration, a laptop lid) wakes up
 * believing it still holds its jobs, and sends the calls it was about to
 * make. By then the reaper has settled its attempts and another worker has
 * claimed the jobs under greater fences and is still running them: the jobs
 * are RUNNING under a live lease, so only the attempt authority (attempt,
 * fence, incarnation) tells the zombie from the successor. Every call the
 * zombie makes must be refused with STALE_AUTHORITY and change nothing,
 * and so must a call naming the successor's attempt with the zombie's
 * fence; the successor then renews and finishes as if nothing happened.
 *
 * The scenario runs ITERATIONS times (default 200; the soak script
 * `test/support/raw-worker-soak.mjs` raises it): LANES pairs of worker
 * processes (zombie and successor on different execution replicas), each
 * pair reused for all its rounds, and in each round the zombie holds BATCH
 * jobs at once when it is frozen, so that one lease expiry serves BATCH
 * scenarios. The lease is short, but long enough that a busy shared
 * machine still lets the successor claim, renew, wait out the zombie's
 * calls and renew again within it.
 */

const ITERATIONS = Number(process.env['DOCKET_ZOMBIE_ITERATIONS'] ?? 200);
const LANES = 2;
const BATCH = 10;
const LEASE_MS = 4_000;

let harness: ExecutionHarness;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'zombie-owner', {
    databaseUrl: await createMigratedTestDatabase('execution zombie'),
    replicas: { execution: 2 },
    env: {
      state: { DOCKET_LEASE_MS: String(LEASE_MS) },
      execution: { DOCKET_REAPER_INTERVAL_MS: '50', DOCKET_RETRY_INTERVAL_MS: '50' },
    },
  });
});

afterAll(() => harness?.close());

/** What one scenario observed. */
interface ZombieScenario {
  readonly jobId: string;
  readonly zombieFence: bigint;
  readonly successorFence: bigint;
}

/** Everything a zombie tries once it wakes up, each with a fresh operation id: every attempt-scoped call. */
function zombieCalls(worker: RawWorker, attempt: AttemptRefInit) {
  return [
    worker.call('renewAttempt', { attempt, operationId: newOperationId() }),
    worker.call('reportProgress', { attempt, operationId: newOperationId(), progress: { completedUnits: 9n, totalUnits: 10n, message: 'zombie' } }),
    worker.call('saveCheckpoint', { attempt, operationId: newOperationId(), checkpoint: { zombie: true } }),
    worker.call('appendEvents', { attempt, operationId: newOperationId(), events: [{ type: 'worker.zombie', payload: { awake: true } }] }),
    worker.call('reportOutcome', { attempt, operationId: newOperationId(), outcome: { case: 'success', value: { result: { by: 'zombie' } } } }),
  ];
}

/** Renews every one of `assignments` (fresh operation ids); fails the test unless each renewal is accepted. */
async function renewAll(worker: RawWorker, assignments: readonly Assignment[]): Promise<void> {
  const answers = await Promise.all(
    assignments.map((assignment) => worker.call('renewAttempt', { attempt: attemptOf(assignment), operationId: newOperationId() })),
  );
  expect(answers.map((answer) => (answer.ok ? 'renewed' : answer.reason))).toEqual(assignments.map(() => 'renewed'));
}

/**
 * Records the jobs' footprints, makes the calls `send` starts, and checks
 * that every one is refused STALE_AUTHORITY and that no footprint changed
 * (`calls` names them in a failure).
 */
async function expectRefusedWithoutTrace(calls: string, ids: readonly string[], send: () => Promise<RawAnswer<unknown>>[]): Promise<void> {
  const before = await Promise.all(ids.map((id) => harness.footprint(id)));
  const answers = await Promise.all(send());
  expect(answers, calls).toEqual(answers.map(() => ({ ok: false, code: Code.FailedPrecondition, reason: 'STALE_AUTHORITY' })));
  expect(await Promise.all(ids.map((id) => harness.footprint(id))), calls).toEqual(before);
}

/** Claims until `count` jobs have been claimed (long-polling meanwhile); the assignments by job id. */
async function claimAll(worker: RawWorker, count: number): Promise<Map<string, Assignment>> {
  const held = new Map<string, Assignment>();
  const deadline = performance.now() + LEASE_MS * 10;
  while (held.size < count && performance.now() < deadline) {
    for (const assignment of await worker.claim({ maxJobs: count - held.size, waitMs: LEASE_MS * 2 })) {
      expect(held.has(assignment.envelope!.jobId)).toBe(false);
      held.set(assignment.envelope!.jobId, assignment);
    }
  }
  return held;
}

/** One lane: `rounds` rounds of BATCH zombie scenarios with the same two worker processes. */
async function runLane(lane: number, rounds: number, failed: AbortSignal): Promise<ZombieScenario[]> {
  const queue = freshQueue(`zombie-${lane}`);
  const zombie = await harness.worker(lane % 2);
  const successor = await harness.worker((lane + 1) % 2);
  await zombie.register(`zombie-${lane}`, [queue], BATCH);
  await successor.register(`successor-${lane}`, [queue], BATCH);
  const observed: ZombieScenario[] = [];
  for (let round = 0; round < rounds && !failed.aborted; round += 1) {
    const jobs = await Promise.all(
      Array.from({ length: BATCH }, (_, index) =>
        harness.submit({
          queue,
          input: { lane, round, index },
          retryPolicy: { maxAttempts: 3, initialBackoff: { nanos: 1_000_000 }, maxBackoff: { nanos: 1_000_000 } },
        }),
      ),
    );
    const ids = jobs.map((job) => job.id).sort();
    const held = await claimAll(zombie, BATCH);
    expect([...held.keys()].sort()).toEqual(ids);
    // While its lease lasts the zombie is the authority: the renewal it will
    // repeat after waking is accepted now.
    await renewAll(zombie, [...held.values()]);

    zombie.freeze();
    // The successor long-polls; a job comes back only once the reaper has
    // settled the zombie's expired attempt and its retry is due. It renews
    // before each step below, as a worker would, so its attempts stay live.
    const taken = await claimAll(successor, BATCH);
    expect([...taken.keys()].sort()).toEqual(ids);
    await renewAll(successor, ids.map((id) => taken.get(id)!));

    // The zombie's calls were made while it was frozen; they reach the
    // service when it wakes, while the successor's attempts are live.
    await expectRefusedWithoutTrace("the zombie's calls", ids, () => {
      const calls = ids.flatMap((id) => zombieCalls(zombie, attemptOf(held.get(id)!)));
      zombie.thaw();
      return calls;
    });
    await renewAll(successor, ids.map((id) => taken.get(id)!));
    // The attempt and incarnation the job has now, with the zombie's fence:
    // only the fence is stale, and that is enough.
    await expectRefusedWithoutTrace("calls with the current attempt and the zombie's fence", ids, () =>
      ids.flatMap((id) => zombieCalls(successor, { ...attemptOf(taken.get(id)!), fence: held.get(id)!.authority!.fence })),
    );

    // The successor's authority is untouched: it renews and finishes each job.
    await renewAll(successor, ids.map((id) => taken.get(id)!));
    const finished = await Promise.all(
      ids.map((id) =>
        successor.call('reportOutcome', {
          attempt: attemptOf(taken.get(id)!),
          operationId: newOperationId(),
          outcome: { case: 'success', value: { result: { by: 'successor' } } },
        }),
      ),
    );
    expect(finished.map((answer) => (answer.ok ? answer.response.job?.status : answer.reason))).toEqual(ids.map(() => JobStatus.SUCCEEDED));

    for (const id of ids) {
      const zombieFence = held.get(id)!.authority!.fence;
      const successorFence = taken.get(id)!.authority!.fence;
      expect(successorFence).toBe(zombieFence + 1n);
      expect(taken.get(id)!.envelope!.attemptNumber).toBe(2);
      observed.push({ jobId: id, zombieFence, successorFence });
    }
  }
  return observed;
}

describe('a zombie worker frozen past its lease', () => {
  it(
    `is refused STALE_AUTHORITY on every call while its successor runs the jobs, and changes nothing (${ITERATIONS} scenarios)`,
    async () => {
      const perLane = Math.ceil(ITERATIONS / (LANES * BATCH));
      // The first lane to fail stops the others at their next round.
      const failed = new AbortController();
      const lanes = Array.from({ length: LANES }, (_, lane) =>
        runLane(lane, perLane, failed.signal).catch((error: unknown) => {
          failed.abort();
          throw error;
        }),
      );
      const scenarios = (await Promise.all(lanes)).flat();
      expect(scenarios.length).toBeGreaterThanOrEqual(ITERATIONS);

      // No job ever completes twice, and fences only grow.
      const ids = scenarios.map((scenario) => scenario.jobId);
      const { rows } = await harness.sql.query<{ job_id: string; fences: string[]; statuses: string[]; succeeded: string }>(
        `select a.job_id,
                array_agg(a.fence::text order by a.attempt_number) as fences,
                array_agg(a.status order by a.attempt_number) as statuses,
                (select count(*) from job_events e where e.job_id = a.job_id and e.type = 'job.succeeded') as succeeded
           from attempts a where a.job_id = any($1) group by a.job_id`,
        [ids],
      );
      expect(rows).toHaveLength(scenarios.length);
      const byJob = new Map(rows.map((row) => [row.job_id, row]));
      for (const scenario of scenarios) {
        const row = byJob.get(scenario.jobId)!;
        expect(row.statuses).toEqual(['LOST', 'SUCCEEDED']);
        expect(row.fences.map(BigInt)).toEqual([scenario.zombieFence, scenario.successorFence]);
        expect(row.succeeded).toBe('1');
      }
      const statuses = await harness.sql.query<{ status: string; count: string }>(
        'select status, count(*) from jobs where id = any($1) group by status',
        [ids],
      );
      expect(statuses.rows).toEqual([{ status: 'SUCCEEDED', count: String(scenarios.length) }]);
    },
    Math.max(180_000, ITERATIONS * 500),
  );

  it('leaves a journal that verifies and tells the story: lost, retried, succeeded, and nothing from the zombie', async () => {
    const queue = freshQueue('zombie-story');
    const zombie = await harness.worker(0);
    const successor = await harness.worker(1);
    await zombie.register('story-zombie', [queue]);
    await successor.register('story-successor', [queue]);
    const job = await harness.submit({ queue, retryPolicy: { maxAttempts: 2, initialBackoff: { nanos: 1_000_000 } } });
    const [held] = await zombie.claim({ waitMs: 5_000 });
    zombie.freeze();
    const [taken] = await successor.claim({ waitMs: LEASE_MS * 20 });
    await successor.expectOk('reportOutcome', {
      attempt: attemptOf(taken!),
      operationId: newOperationId(),
      outcome: { case: 'success', value: { result: {} } },
    });
    zombie.thaw();
    await Promise.all(zombieCalls(zombie, attemptOf(held!)));

    const journal = await harness.journal(job.id);
    expect(journal.map((event) => event.type)).toEqual(LOST_ATTEMPT_RETRIED_JOURNAL);
    const started = journal.filter((event) => event.type === 'attempt.started');
    expect(started.map((event) => event.fence)).toEqual([held!.authority!.fence, taken!.authority!.fence]);
    expect(journal.find((event) => event.type === 'attempt.lost')?.attemptId).toBe(held!.authority!.attemptId);
    expect(journal.some((event) => event.type.startsWith('worker.'))).toBe(false);
  });
});

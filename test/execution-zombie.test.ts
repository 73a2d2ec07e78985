import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, stopAll, type DocketCluster } from './support/cluster.js';
import { createTestDatabase } from './support/database.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId, type RawWorker } from './support/raw-worker.js';

/*
 * The zombie worker (SPEC section 5): a worker process that is frozen past
 * its lease (SIGSTOP: a GC pause, a VM migration, a laptop lid) wakes up
 * believing it still holds the job. By then the reaper has settled its
 * attempt, another worker has claimed the job under a greater fence and
 * finished it. Every call the zombie makes must be refused with
 * STALE_AUTHORITY and change nothing.
 *
 * The scenario runs ITERATIONS times (default 200; the soak script
 * `test/support/raw-worker-soak.mjs` raises it) on LANES pairs of worker
 * processes in parallel, each pair reused for all its iterations, with a
 * short lease and fast background loops so that an iteration takes about
 * half a second.
 */

const ITERATIONS = Number(process.env['DOCKET_ZOMBIE_ITERATIONS'] ?? 200);
const LANES = 4;
const LEASE_MS = 500;

let cluster: DocketCluster;
let harness: ExecutionHarness;

beforeAll(async () => {
  cluster = await startCluster({
    databaseUrl: await createTestDatabase('execution zombie'),
    replicas: { execution: 2 },
    env: {
      state: { DOCKET_LEASE_MS: String(LEASE_MS) },
      execution: { DOCKET_REAPER_INTERVAL_MS: '50', DOCKET_RETRY_INTERVAL_MS: '50' },
    },
  });
  harness = await ExecutionHarness.open(cluster, 'zombie-owner');
});

afterAll(async () => {
  await harness?.close();
  await stopAll();
});

/** What one iteration observed. */
interface ZombieRound {
  readonly jobId: string;
  readonly zombieFence: bigint;
  readonly successorFence: bigint;
}

/** Everything a zombie tries once it wakes up, each with a fresh operation id. */
function zombieCalls(zombie: RawWorker, attempt: ReturnType<typeof attemptOf>) {
  return [
    zombie.call('renewAttempt', { attempt, operationId: newOperationId() }),
    zombie.call('reportProgress', { attempt, operationId: newOperationId(), progress: { completedUnits: 9n, totalUnits: 10n, message: 'zombie' } }),
    zombie.call('saveCheckpoint', { attempt, operationId: newOperationId(), checkpoint: { zombie: true } }),
    zombie.call('appendEvents', { attempt, operationId: newOperationId(), events: [{ type: 'worker.zombie', payload: { awake: true } }] }),
    zombie.call('reportOutcome', { attempt, operationId: newOperationId(), outcome: { case: 'success', value: { result: { by: 'zombie' } } } }),
  ];
}

/** One lane: `rounds` zombie scenarios with the same two worker processes. */
async function runLane(lane: number, rounds: number): Promise<ZombieRound[]> {
  const queue = freshQueue(`zombie-${lane}`);
  const zombie = await harness.worker(lane % 2);
  const successor = await harness.worker((lane + 1) % 2);
  await zombie.register(`zombie-${lane}`, [queue]);
  await successor.register(`successor-${lane}`, [queue]);
  const observed: ZombieRound[] = [];
  for (let round = 0; round < rounds; round += 1) {
    const job = await harness.submit({
      queue,
      input: { lane, round },
      retryPolicy: { maxAttempts: 3, initialBackoff: { nanos: 1_000_000 }, maxBackoff: { nanos: 1_000_000 } },
    });
    const [held] = await zombie.claim({ waitMs: 5_000 });
    expect(held?.envelope?.jobId).toBe(job.id);
    const zombieAuthority = attemptOf(held!);

    zombie.freeze();
    // The successor long-polls; the job comes back only once the reaper
    // has settled the zombie's expired attempt and the retry is due.
    const [taken] = await successor.claim({ waitMs: LEASE_MS * 20 });
    expect(taken?.envelope?.jobId).toBe(job.id);
    const successorFence = taken!.authority!.fence;
    expect(successorFence).toBe(held!.authority!.fence + 1n);
    expect(taken!.envelope!.attemptNumber).toBe(2);
    const t0 = Date.now();
    const dbg = await successor.call('reportOutcome', {
      attempt: attemptOf(taken!),
      operationId: newOperationId(),
      outcome: { case: 'success', value: { result: { by: 'successor' } } },
    });
    if (!dbg.ok) console.log('DEBUG', Date.now() - t0, JSON.stringify(taken!.authority), JSON.stringify(await harness.footprint(job.id), null, 1));
    const finished = await successor.expectOk('reportOutcome', {
      attempt: attemptOf(taken!),
      operationId: newOperationId(),
      outcome: { case: 'success', value: { result: { by: 'successor' } } },
    });
    expect(finished.job?.result).toEqual({ by: 'successor' });

    const before = await harness.footprint(job.id);
    zombie.thaw();
    const answers = await Promise.all(zombieCalls(zombie, zombieAuthority));
    expect(answers).toEqual(answers.map(() => ({ ok: false, code: Code.FailedPrecondition, reason: 'STALE_AUTHORITY' })));
    expect(await harness.footprint(job.id)).toEqual(before);
    observed.push({ jobId: job.id, zombieFence: held!.authority!.fence, successorFence });
  }
  return observed;
}

describe('a zombie worker frozen past its lease', () => {
  it(
    `is refused STALE_AUTHORITY on every call and changes nothing (${ITERATIONS} rounds)`,
    async () => {
      const perLane = Math.ceil(ITERATIONS / LANES);
      const rounds = (await Promise.all(Array.from({ length: LANES }, (_, lane) => runLane(lane, perLane)))).flat();
      expect(rounds.length).toBeGreaterThanOrEqual(ITERATIONS);

      // No job ever completes twice, and fences only grow.
      const ids = rounds.map((round) => round.jobId);
      const { rows } = await harness.sql.query<{ job_id: string; fences: string[]; statuses: string[]; succeeded: string }>(
        `select a.job_id,
                array_agg(a.fence::text order by a.attempt_number) as fences,
                array_agg(a.status order by a.attempt_number) as statuses,
                (select count(*) from job_events e where e.job_id = a.job_id and e.type = 'job.succeeded') as succeeded
           from attempts a where a.job_id = any($1) group by a.job_id`,
        [ids],
      );
      expect(rows).toHaveLength(rounds.length);
      const byJob = new Map(rows.map((row) => [row.job_id, row]));
      for (const round of rounds) {
        const row = byJob.get(round.jobId)!;
        expect(row.statuses).toEqual(['LOST', 'SUCCEEDED']);
        expect(row.fences.map(BigInt)).toEqual([round.zombieFence, round.successorFence]);
        expect(row.succeeded).toBe('1');
      }
      const statuses = await harness.sql.query<{ status: string; count: string }>(
        'select status, count(*) from jobs where id = any($1) group by status',
        [ids],
      );
      expect(statuses.rows).toEqual([{ status: 'SUCCEEDED', count: String(rounds.length) }]);
    },
    Math.max(120_000, ITERATIONS * 1_500),
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
    expect(journal.map((event) => event.type)).toEqual([
      'job.admitted',
      'attempt.started',
      'attempt.lost',
      'job.retry_scheduled',
      'job.requeued',
      'attempt.started',
      'job.succeeded',
    ]);
    const started = journal.filter((event) => event.type === 'attempt.started');
    expect(started.map((event) => event.fence)).toEqual([held!.authority!.fence, taken!.authority!.fence]);
    expect(journal.find((event) => event.type === 'attempt.lost')?.attemptId).toBe(held!.authority!.attemptId);
    expect(journal.some((event) => event.type.startsWith('worker.'))).toBe(false);
  });
});

import { setTimeout as sleep } from 'node:timers/promises';
import { durationFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
import { Code, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AttemptRefSchema } from '@docket/proto/docket/common/v1/attempt_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { ExecutionService, type Assignment } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { inParallel } from './support/admission-audit.js';
import { clientFor, settle, type Settled } from './support/clients.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId } from './support/raw-worker.js';

/*
 * Group-committed claims and attempt reports (SPEC section 5;
 * docs/write-path.md) through the execution service's public API. One state
 * process decides every claim and report, so concurrent calls share
 * transactions; two execution processes forward them. Whatever shares a
 * batch, no job goes to two attempts, no queue runs more than its
 * max_concurrency, no incarnation more than its own, higher priorities go
 * first, and every report is judged on its own authority: a stale one is
 * refused and changes nothing, and its neighbours in the batch are decided
 * as if it were not there.
 */

let harness: ExecutionHarness;
let executions: Client<typeof ExecutionService>[];

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'claim-batch-owner', {
    databaseUrl: await createMigratedTestDatabase('claim batches'),
    replicas: { execution: 2 },
    env: { execution: { DOCKET_RETRY_INTERVAL_MS: '50' } },
  });
  executions = harness.cluster.replicas.execution.map((_, replica) => harness.executionClient(replica));
});

afterAll(() => harness?.close());

const FAST_RETRY = { maxAttempts: 5, initialBackoff: durationFromMs(1), maxBackoff: durationFromMs(1) };

async function register(name: string, queues: string[], maxConcurrency: number, replica = 0): Promise<string> {
  return (await executions[replica]!.registerWorker({ workerName: name, queues, maxConcurrency })).workerIncarnation;
}

function claim(incarnation: string, maxJobs: number, replica = 0, waitMs = 0): Promise<Assignment[]> {
  return executions[replica]!
    .claimJobs({ workerIncarnation: incarnation, maxJobs, wait: durationFromMs(waitMs), operationId: newOperationId() })
    .then((response) => response.assignments);
}

/** Claims with `incarnation` until every one of `jobIds` is held (long-polling meanwhile); assignments by job id. */
async function claimEach(incarnation: string, jobIds: readonly string[]): Promise<Map<string, Assignment>> {
  const held = new Map<string, Assignment>();
  const deadline = performance.now() + 20_000;
  while (held.size < jobIds.length && performance.now() < deadline) {
    for (const assignment of await claim(incarnation, jobIds.length - held.size, 0, 2_000)) held.set(assignment.envelope!.jobId, assignment);
  }
  expect([...held.keys()].sort()).toEqual([...jobIds].sort());
  return held;
}

function succeed(assignment: Assignment, replica = 0, attempt: MessageInitShape<typeof AttemptRefSchema> = attemptOf(assignment)) {
  return executions[replica]!.reportOutcome({
    attempt,
    operationId: newOperationId(),
    outcome: { case: 'success', value: { result: { by: 'valid', fence: Number(assignment.authority!.fence) } } },
  });
}

async function submitMany(count: number, make: (index: number) => Parameters<ExecutionHarness['submit']>[0]): Promise<Job[]> {
  return inParallel(Array.from({ length: count }, (_, index) => index), 16, (index) => harness.submit(make(index)));
}

/** Jobs of `queues` with two ACTIVE attempts at once, and jobs whose fences do not strictly increase with attempt_number. */
async function attemptAnomalies(queues: readonly string[]): Promise<{ doubleActive: string[]; fencesNotIncreasing: string[] }> {
  const { rows } = await harness.sql.query<{ job_id: string; active: number; fences: string[] }>(
    `select job_id, count(*) filter (where status = 'ACTIVE')::int as active,
            array_agg(fence::text order by attempt_number) as fences
       from attempts where queue = any($1) group by job_id`,
    [queues],
  );
  return {
    doubleActive: rows.filter((row) => row.active > 1).map((row) => row.job_id),
    fencesNotIncreasing: rows
      .filter((row) => row.fences.some((fence, index) => index > 0 && BigInt(fence) <= BigInt(row.fences[index - 1]!)))
      .map((row) => row.job_id),
  };
}

/** How many distinct transactions wrote the feed entries that moved `jobIds` to `status`. */
async function transactionsMoving(jobIds: readonly string[], status: string): Promise<{ entries: number; transactions: number }> {
  const { rows } = await harness.sql.query<{ entries: number; transactions: number }>(
    `select count(*)::int as entries, count(distinct transaction_id)::int as transactions
       from job_changes where job_id = any($1) and status = $2`,
    [jobIds, status],
  );
  return rows[0]!;
}

describe('concurrent claims by one incarnation', () => {
  it('never exceed its max_concurrency nor hand one job twice, while sharing transactions', async () => {
    const queue = freshQueue('solo');
    const LIMIT = 10;
    const jobs = await submitMany(50, (index) => ({ queue, input: { index } }));
    const incarnation = await register('solo-claimer', [queue], LIMIT);
    const claimedOnce = new Set<string>();
    let nonEmptyClaims = 0;
    for (let round = 0; round < 5; round += 1) {
      // 30 claims at once, for 2 jobs each, through both execution processes: the incarnation holds nothing.
      const answers = await Promise.all(Array.from({ length: 30 }, (_, index) => claim(incarnation, 2, index % 2)));
      const assignments = answers.flat();
      nonEmptyClaims += answers.filter((answer) => answer.length > 0).length;
      expect(assignments).toHaveLength(LIMIT);
      for (const assignment of assignments) {
        expect(claimedOnce.has(assignment.envelope!.jobId)).toBe(false);
        claimedOnce.add(assignment.envelope!.jobId);
      }
      const { rows } = await harness.sql.query<{ held: number }>(
        "select count(*)::int as held from attempts where worker_incarnation = $1 and status = 'ACTIVE'",
        [incarnation],
      );
      expect(rows[0]!.held).toBe(LIMIT);
      // A further claim finds the incarnation full.
      expect(await claim(incarnation, 5)).toEqual([]);
      await Promise.all(assignments.map((assignment, index) => succeed(assignment, index % 2)));
    }
    expect([...claimedOnce].sort()).toEqual(jobs.map((job) => job.id).sort());
    // Coalesced: the claims that got jobs committed in fewer transactions than there were such claims.
    const moved = await transactionsMoving(jobs.map((job) => job.id), 'RUNNING');
    expect(moved.entries).toBe(jobs.length);
    expect(moved.transactions).toBeLessThan(nonEmptyClaims);
    expect(await attemptAnomalies([queue])).toEqual({ doubleActive: [], fencesNotIncreasing: [] });
  });
});

describe('concurrent claims by 16 incarnations', () => {
  it(
    'hand every job to exactly one attempt and never run more of a queue than its max_concurrency',
    async () => {
      const WORKERS = 16;
      const PER_CLAIM = 4;
      const QUEUE_LIMIT = 4;
      const bulk = freshQueue('bulk');
      const limited = freshQueue('limited');
      await harness.limitQueue(limited, QUEUE_LIMIT);
      const jobs = [
        ...(await submitMany(240, (index) => ({ queue: bulk, input: { index } }))),
        ...(await submitMany(60, (index) => ({ queue: limited, input: { index } }))),
      ];
      const total = jobs.length;

      // A sampler reads the committed state over and over while the workers run: the limited queue's
      // running attempts, and jobs with two ACTIVE attempts. Any sample over the limit is a violation.
      let running = true;
      const limitedSamples: number[] = [];
      const doubleActiveSeen = new Set<string>();
      const sampler = (async () => {
        while (running) {
          const { rows } = await harness.sql.query<{ limited: number; double_active: string[] | null }>(
            `select (select count(*)::int from attempts where queue = $1 and status = 'ACTIVE') as limited,
                    (select array_agg(job_id) from (select job_id from attempts where queue = any($2) and status = 'ACTIVE'
                                                     group by job_id having count(*) > 1) d) as double_active`,
            [limited, [bulk, limited]],
          );
          limitedSamples.push(rows[0]!.limited);
          for (const id of rows[0]!.double_active ?? []) doubleActiveSeen.add(id);
          // Real time: the sampling interval of this background sampler.
          await sleep(2);
        }
      })();

      const holders = new Map<string, string>();
      const doubleClaims: string[] = [];
      const claimCounts = new Map<string, number>();
      let completed = 0;
      const runWorker = async (index: number): Promise<void> => {
        const replica = index % 2;
        const incarnation = await register(`fleet-${index}`, [bulk, limited], PER_CLAIM, replica);
        while (completed < total) {
          const assignments = await claim(incarnation, PER_CLAIM, replica, 300);
          expect(assignments.length).toBeLessThanOrEqual(PER_CLAIM);
          for (const assignment of assignments) {
            const jobId = assignment.envelope!.jobId;
            if (holders.has(jobId)) doubleClaims.push(jobId);
            holders.set(jobId, incarnation);
            claimCounts.set(jobId, (claimCounts.get(jobId) ?? 0) + 1);
          }
          await Promise.all(
            assignments.map(async (assignment) => {
              // Real time: handlers of uneven length, so that completions and claims interleave.
              await sleep(Math.floor(Math.random() * 5));
              holders.delete(assignment.envelope!.jobId);
              const { job } = await succeed(assignment, replica);
              expect(job?.status).toBe(JobStatus.SUCCEEDED);
              completed += 1;
            }),
          );
        }
      };
      try {
        await Promise.all(Array.from({ length: WORKERS }, (_, index) => runWorker(index)));
      } finally {
        running = false;
        await sampler;
      }

      expect(doubleClaims).toEqual([]);
      expect([...claimCounts.values()].every((count) => count === 1)).toBe(true);
      expect([...claimCounts.keys()].sort()).toEqual(jobs.map((job) => job.id).sort());
      expect([...doubleActiveSeen]).toEqual([]);
      expect(Math.max(...limitedSamples)).toBeLessThanOrEqual(QUEUE_LIMIT);
      // The limit was reached (it was exercised), never exceeded.
      expect(limitedSamples).toContain(QUEUE_LIMIT);
      const { rows: statuses } = await harness.sql.query('select status, count(*)::int as jobs from jobs where queue = any($1) group by status', [
        [bulk, limited],
      ]);
      expect(statuses).toEqual([{ status: 'SUCCEEDED', jobs: total }]);
      const { rows: attemptsPerJob } = await harness.sql.query(
        "select count(*)::int as jobs from attempts where queue = any($1) and status = 'SUCCEEDED' group by job_id having count(*) <> 1",
        [[bulk, limited]],
      );
      expect(attemptsPerJob).toEqual([]);
      expect(await attemptAnomalies([bulk, limited])).toEqual({ doubleActive: [], fencesNotIncreasing: [] });
    },
    120_000,
  );

  it('honour priority: a burst of claims takes the highest priorities first, each answer in priority then age order', async () => {
    const queue = freshQueue('priority');
    const PER_LEVEL = 32;
    const levels = [9, 5, 1];
    // Submitted interleaved, so that age alone would mix the levels.
    const jobs = await submitMany(PER_LEVEL * levels.length, (index) => ({ queue, priority: levels[index % levels.length]!, input: { index } }));
    const priorityOf = new Map(jobs.map((job) => [job.id, job.priority]));
    const createdAtOf = new Map(jobs.map((job) => [job.id, timestampMs(job.createdAt!)]));
    const incarnations = await Promise.all(Array.from({ length: 16 }, (_, index) => register(`ranker-${index}`, [queue], 10, index % 2)));
    for (const level of levels) {
      // 16 claims at once, 2 jobs each: exactly the 32 jobs of the highest level left.
      const answers = await Promise.all(incarnations.map((incarnation, index) => claim(incarnation, 2, index % 2)));
      const claimed = answers.flat().map((assignment) => assignment.envelope!.jobId);
      expect(claimed).toHaveLength(PER_LEVEL);
      expect(new Set(claimed.map((id) => priorityOf.get(id)))).toEqual(new Set([level]));
      for (const answer of answers) {
        const ids = answer.map((assignment) => assignment.envelope!.jobId);
        const ordered = [...ids].sort((a, b) => priorityOf.get(b)! - priorityOf.get(a)! || createdAtOf.get(a)! - createdAtOf.get(b)! || a.localeCompare(b));
        expect(ids).toEqual(ordered);
      }
    }
  });
});

describe('attempt reports in one coalesced batch', () => {
  it('refuse each stale report (STALE_AUTHORITY, or STALE_INCARNATION when superseded) without affecting its neighbours', async () => {
    const queue = freshQueue('stale');
    const retryPolicy = FAST_RETRY;
    const jobs = await submitMany(12, (index) => ({ queue, input: { index }, retryPolicy }));
    const ids = jobs.map((job) => job.id);
    const [reclaimed, validOnly, fenced] = [ids.slice(0, 3), ids.slice(3, 8), ids.slice(8, 12)] as string[][];

    // Worker A holds jobs 0..11. Jobs 0..2 fail once and are claimed again by A: attempt 2, fence 2.
    const a = await register('stale-a', [queue], 50);
    const firstHold = await claimEach(a, [...reclaimed!, ...validOnly!, ...fenced!]);
    for (const id of reclaimed!) {
      await executions[0]!.reportOutcome({
        attempt: attemptOf(firstHold.get(id)!),
        operationId: newOperationId(),
        outcome: { case: 'failure', value: { failureClass: FailureClass.TRANSIENT, message: 'once' } },
      });
    }
    const secondHold = await claimEach(a, reclaimed!);
    for (const id of reclaimed!) expect(secondHold.get(id)!.authority!.fence).toBe(firstHold.get(id)!.authority!.fence + 1n);

    // Worker B's first incarnation holds 4 more jobs; B registers again, which settles them as lost;
    // the new incarnation claims them again under fence 2.
    const superseded = (await submitMany(4, (index) => ({ queue, input: { index: 12 + index }, retryPolicy }))).map((job) => job.id);
    ids.push(...superseded);
    const b1 = await register('stale-b', [queue], 50);
    const b1Hold = await claimEach(b1, superseded);
    const b2 = await register('stale-b', [queue], 50);
    const b2Hold = await claimEach(b2, superseded);
    for (const id of superseded) expect(b2Hold.get(id)!.authority!.fence).toBe(b1Hold.get(id)!.authority!.fence + 1n);

    const footprintsBefore = new Map(await Promise.all(ids.map(async (id) => [id, await harness.footprint(id)] as const)));

    // One burst, interleaved, through one execution process (one state process): every kind of stale
    // call next to valid ones, some on the same job.
    type Expected = 'ok' | 'STALE_AUTHORITY' | 'STALE_INCARNATION';
    const calls: { label: string; expected: Expected; call: () => Promise<unknown> }[] = [];
    const withFence = (assignment: Assignment, fence: bigint) => ({ ...attemptOf(assignment), fence });
    for (const id of reclaimed!) {
      calls.push({ label: `old attempt of ${id}`, expected: 'STALE_AUTHORITY', call: () => succeed(firstHold.get(id)!) });
      calls.push({ label: `current attempt of ${id}`, expected: 'ok', call: () => succeed(secondHold.get(id)!) });
    }
    for (const id of validOnly!) calls.push({ label: `valid ${id}`, expected: 'ok', call: () => succeed(firstHold.get(id)!) });
    const fenceOf = (id: string) => firstHold.get(id)!.authority!.fence;
    calls.push({ label: `fence + 1 beside a valid report`, expected: 'STALE_AUTHORITY', call: () => succeed(firstHold.get(validOnly![0]!)!, 0, withFence(firstHold.get(validOnly![0]!)!, fenceOf(validOnly![0]!) + 1n)) });
    for (const id of fenced!) {
      const held = firstHold.get(id)!;
      calls.push({ label: `fence + 1 on ${id}`, expected: 'STALE_AUTHORITY', call: () => succeed(held, 0, withFence(held, fenceOf(id) + 1n)) });
      calls.push({ label: `fence - 1 on ${id}`, expected: 'STALE_AUTHORITY', call: () => succeed(held, 0, withFence(held, fenceOf(id) - 1n)) });
      calls.push({
        label: `renewal of ${id}`,
        expected: 'ok',
        call: () => executions[0]!.renewAttempt({ attempt: attemptOf(held), operationId: newOperationId() }),
      });
      calls.push({
        label: `stale renewal of ${id}`,
        expected: 'STALE_AUTHORITY',
        call: () => executions[0]!.renewAttempt({ attempt: withFence(held, fenceOf(id) + 1n), operationId: newOperationId() }),
      });
    }
    for (const id of superseded) {
      calls.push({ label: `superseded outcome on ${id}`, expected: 'STALE_INCARNATION', call: () => succeed(b1Hold.get(id)!) });
      calls.push({
        label: `superseded renewal on ${id}`,
        expected: 'STALE_INCARNATION',
        call: () => executions[0]!.renewAttempt({ attempt: attemptOf(b1Hold.get(id)!), operationId: newOperationId() }),
      });
    }
    for (const id of superseded.slice(0, 2)) calls.push({ label: `current attempt of ${id}`, expected: 'ok', call: () => succeed(b2Hold.get(id)!) });
    // Mix them, deterministically, and send them all at once.
    const burst = calls.map((call, index) => ({ call, rank: (index * 7919) % calls.length })).sort((x, y) => x.rank - y.rank).map((x) => x.call);
    const answers: Settled<unknown>[] = await Promise.all(burst.map((entry) => settle(entry.call())));

    const judged = burst.map((entry, index) => {
      const answer = answers[index]!;
      return { label: entry.label, got: answer.ok ? 'ok' : `${Code[answer.failure.code]}/${answer.failure.reason}` };
    });
    expect(judged).toEqual(
      burst.map((entry) => ({ label: entry.label, got: entry.expected === 'ok' ? 'ok' : `${Code[Code.FailedPrecondition]}/${entry.expected}` })),
    );

    // The jobs reflect only the valid reports.
    const succeeded = [...reclaimed!, ...validOnly!, ...superseded.slice(0, 2)];
    for (const id of succeeded) {
      const row = await harness.jobRow(id);
      const expectedFence = (secondHold.get(id) ?? b2Hold.get(id) ?? firstHold.get(id))!.authority!.fence;
      expect(row).toMatchObject({ status: 'SUCCEEDED', result: { by: 'valid', fence: Number(expectedFence) }, fence: String(expectedFence) });
      expect((await harness.eventTypes(id)).filter((type) => type === 'job.succeeded')).toHaveLength(1);
    }
    const attemptStatuses = async (id: string) => (await harness.attempts(id)).map((attempt) => attempt.status);
    for (const id of reclaimed!) expect(await attemptStatuses(id)).toEqual(['FAILED', 'SUCCEEDED']);
    for (const id of validOnly!) expect(await attemptStatuses(id)).toEqual(['SUCCEEDED']);
    for (const id of superseded.slice(0, 2)) expect(await attemptStatuses(id)).toEqual(['LOST', 'SUCCEEDED']);
    // Jobs that only got stale reports are exactly as they were; renewed ones differ only in their lease.
    for (const id of superseded.slice(2)) expect(await harness.footprint(id)).toEqual(footprintsBefore.get(id));
    for (const id of fenced!) {
      const before = footprintsBefore.get(id) as { job: { lease_expires_at: Date } };
      const after = (await harness.footprint(id)) as { job: { lease_expires_at: Date; status: string } };
      expect(after.job.status).toBe('RUNNING');
      expect(after.job.lease_expires_at.getTime()).toBeGreaterThan(before.job.lease_expires_at.getTime());
      expect({ ...after, job: { ...after.job, lease_expires_at: null } }).toEqual({ ...before, job: { ...before.job, lease_expires_at: null } });
    }

    // The burst was decided in shared transactions: the valid outcomes committed in fewer transactions than outcomes.
    const moved = await transactionsMoving(succeeded, 'SUCCEEDED');
    expect(moved.entries).toBe(succeeded.length);
    expect(moved.transactions).toBeLessThan(succeeded.length);
    expect(await attemptAnomalies([queue])).toEqual({ doubleActive: [], fencesNotIncreasing: [] });
  });
});

describe('a worker batch of reports and claims', () => {
  it('decides them in one transaction, the claims counting the slots the reports free, and answers each as if alone', async () => {
    const queue = freshQueue('together');
    await harness.limitQueue(queue, 1);
    const jobs = await submitMany(2, (index) => ({ queue, input: { index } }));
    const incarnation = await register('together', [queue], 1);
    const [held] = await claim(incarnation, 1, 0, 2_000);
    const first = jobs.find((job) => job.id === held!.envelope!.jobId);
    const second = jobs.find((job) => job !== first);
    const { rows } = await harness.sql.query<{ subject: string }>('select subject from worker_incarnations where id = $1', [incarnation]);
    const subject = rows[0]!.subject;

    // What one execution process sends when a worker reports a job and claims the next in the same turn:
    // one HandleWorkerCalls, which the state process decides as one worker batch.
    const state = clientFor(StateService, harness.cluster.state.url, harness.cluster.serviceToken);
    const { results } = await state.handleWorkerCalls({
      calls: [
        {
          subject,
          request: { case: 'reportOutcome', value: { attempt: attemptOf(held!), operationId: newOperationId(), outcome: { case: 'success', value: {} } } },
        },
        { subject, request: { case: 'claimJobs', value: { workerIncarnation: incarnation, maxJobs: 1, operationId: newOperationId() } } },
        { subject, request: { case: 'claimJobs', value: { workerIncarnation: 'wi_unknown_0000', maxJobs: 1, operationId: newOperationId() } } },
      ],
    });
    const [reported, claimed, stale] = results.map((result) => result.result);
    expect(reported?.case === 'response' && reported.value.response.case).toBe('reportOutcome');
    // The incarnation (max_concurrency 1) and the queue (max_concurrency 1) were full as the batch began; the report freed both.
    const assignments = claimed?.case === 'response' && claimed.value.response.case === 'claimJobs' ? claimed.value.response.value.assignments : [];
    expect(assignments.map((assignment) => assignment.envelope!.jobId)).toEqual([second!.id]);
    expect(stale?.case === 'error' && stale.value.code).toBe(Code.FailedPrecondition);

    const ended = await transactionsMoving([first!.id], 'SUCCEEDED');
    const started = await harness.sql.query<{ transaction_id: string }>(
      "select transaction_id::text from job_changes where job_id = $1 and status = 'RUNNING'",
      [second!.id],
    );
    const finished = await harness.sql.query<{ transaction_id: string }>(
      "select transaction_id::text from job_changes where job_id = $1 and status = 'SUCCEEDED'",
      [first!.id],
    );
    expect(ended).toEqual({ entries: 1, transactions: 1 });
    expect(started.rows.map((row) => row.transaction_id)).toEqual(finished.rows.map((row) => row.transaction_id));
    // Nothing beyond the limits: one job running, in its queue and for its incarnation.
    const running = await harness.sql.query<{ running: number }>("select count(*)::int as running from jobs where queue = $1 and status = 'RUNNING'", [queue]);
    expect(running.rows[0]!.running).toBe(1);
  });
});

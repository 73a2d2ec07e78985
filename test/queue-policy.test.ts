import { setTimeout as sleep } from 'node:timers/promises';
import { durationFromMs, durationMs } from '@bufbuild/protobuf/wkt';
import { Code, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { failureOf } from './support/clients.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { runDocket } from './support/docket-cli.js';
import { until } from './support/polling.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId, type RawWorker } from './support/raw-worker.js';

/*
 * Queue administration and flow control (SPEC section 13): SetQueuePolicy
 * and GetQueue (admins only), a paused queue, and a rate limit judged by
 * the database clock, counted from the attempts table.
 */

let harness: ExecutionHarness;
let admin: Client<typeof AdmissionService>;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'queue-owner', { databaseUrl: await createMigratedTestDatabase('queue policy') });
  admin = await harness.queueAdmin();
});

afterAll(() => harness?.close());

async function workerOn(queue: string, maxConcurrency = 4): Promise<RawWorker> {
  const worker = await harness.worker();
  await worker.register(`queue-${queue}-${Math.random().toString(36).slice(2, 8)}`, [queue], maxConcurrency);
  return worker;
}

/** Claims up to `maxJobs` jobs at a time and completes each after 100 ms, until `done()`. */
async function workUntil(worker: RawWorker, done: () => boolean, maxJobs = 1): Promise<void> {
  while (!done()) {
    const assignments = await worker.claim({ maxJobs, waitMs: 500 });
    // Real time: each job takes its worker 100 ms, so attempts overlap and the limits are met.
    await sleep(100);
    for (const assignment of assignments) {
      await worker.expectOk('reportOutcome', { attempt: attemptOf(assignment), operationId: newOperationId(), outcome: { case: 'success', value: {} } });
    }
  }
}

/**
 * The most ACTIVE attempts each concurrency key of `queue` had at once ('' for none). Attempts' times are their
 * transactions' start times, so a limit is judged on committed state: this reads every key's ACTIVE attempts over
 * and over until stopped (as test/claim-batches.test.ts does for max_concurrency).
 */
function sampleActivePerKey(queue: string): { stop(): Promise<Map<string, number>> } {
  const peaks = new Map<string, number>();
  let sampling = true;
  const done = (async () => {
    while (sampling) {
      const { rows } = await harness.sql.query<{ key: string | null; active: number }>(
        `select j.concurrency_key as key, count(*)::int as active from attempts a join jobs j on j.id = a.job_id
         where a.queue = $1 and a.status = 'ACTIVE' group by 1`,
        [queue],
      );
      for (const { key, active } of rows) peaks.set(key ?? '', Math.max(peaks.get(key ?? '') ?? 0, active));
      // Real time: the sampling interval of this background sampler.
      await sleep(2);
    }
  })();
  return {
    async stop() {
      sampling = false;
      await done;
      return peaks;
    },
  };
}

describe('SetQueuePolicy and GetQueue', () => {
  it('change only the fields given, remove a limit with 0, and report the policy with the queue statistics', async () => {
    const queue = freshQueue('policy');
    const initial = (await admin.getQueue({ queue })).policy!;
    expect(initial).toMatchObject({ queue, maxConcurrency: 0, paused: false });
    expect([initial.rateLimit, initial.retention]).toEqual([undefined, undefined]);

    const limited = await admin.setQueuePolicy({ queue, maxConcurrency: 3, rateLimit: { jobs: 50, per: durationFromMs(10_000) } });
    expect(limited.policy).toMatchObject({ maxConcurrency: 3, rateLimit: { jobs: 50, per: durationFromMs(10_000) }, paused: false });
    const paused = await admin.setQueuePolicy({ queue, paused: true, retention: { softDeleteAfter: durationFromMs(86_400_000) } });
    expect(paused.policy).toMatchObject({ maxConcurrency: 3, rateLimit: { jobs: 50 }, paused: true, retention: { softDeleteAfter: durationFromMs(86_400_000) } });
    const unlimited = await admin.setQueuePolicy({ queue, maxConcurrency: 0, rateLimit: { jobs: 0 }, paused: false });
    expect(unlimited.policy).toMatchObject({ maxConcurrency: 0, paused: false, retention: { softDeleteAfter: durationFromMs(86_400_000) } });
    expect(unlimited.policy!.rateLimit).toBeUndefined();
    // Nothing left to enforce: no settings row, so claims of the queue take no lock.
    expect((await harness.sql.query('select 1 from queue_settings where queue = $1', [queue])).rows).toHaveLength(0);

    const jobs = await Promise.all(Array.from({ length: 4 }, () => harness.submit({ queue })));
    await harness.admission.cancelJob({ idempotencyKey: `cancel-${jobs[3]!.id}`, jobId: jobs[3]!.id });
    const worker = await workerOn(queue);
    const [assignment] = await worker.claim({ maxJobs: 1, waitMs: 5_000 });
    expect(assignment).toBeDefined();
    // Real time: the oldest queued job must have aged a measurable 50 ms (asserted below).
    await sleep(50);
    const stats = await admin.getQueue({ queue });
    expect(stats.counts.map((count) => [JobStatus[count.status], count.jobs])).toEqual([
      ['QUEUED', 2n],
      ['RUNNING', 1n],
      ['CANCELLED', 1n],
    ]);
    expect(stats.runningAttempts).toBe(1n);
    expect(durationMs(stats.oldestQueuedAge!)).toBeGreaterThanOrEqual(50);
  });

  it('is for admins only, refuses a bad policy naming the field, and changes nothing when it refuses', async () => {
    const queue = freshQueue('policy-refused');
    await admin.setQueuePolicy({ queue, maxConcurrency: 7 });
    expect(await failureOf(harness.admission.setQueuePolicy({ queue, paused: true }))).toMatchObject({ code: Code.PermissionDenied });
    expect(await failureOf(harness.admission.getQueue({ queue }))).toMatchObject({ code: Code.PermissionDenied });
    const bad = [
      [{ queue: 'Not A Queue' }, 'queue'],
      [{ queue, maxConcurrency: -1 }, 'max_concurrency'],
      [{ queue, maxConcurrency: 100_001 }, 'max_concurrency'],
      [{ queue, rateLimit: { jobs: 5 } }, 'rate_limit.per'],
      [{ queue, rateLimit: { jobs: 5, per: durationFromMs(999) } }, 'rate_limit.per'],
      [{ queue, rateLimit: { jobs: -2, per: durationFromMs(1_000) } }, 'rate_limit.jobs'],
      [{ queue, retention: { softDeleteAfter: durationFromMs(10) } }, 'retention.soft_delete_after'],
    ] as const;
    for (const [request, field] of bad) {
      const failure = await failureOf(admin.setQueuePolicy(request));
      expect(failure).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD' });
      expect(failure.violations.map((violation) => violation.field)).toEqual([field]);
    }
    const kept = (await admin.getQueue({ queue })).policy!;
    expect(kept).toMatchObject({ maxConcurrency: 7, paused: false });
    expect(kept.rateLimit).toBeUndefined();
  });
});

describe('docket queue', () => {
  it('sets, pauses, resumes and reads a queue as an admin, and is refused for a user', async () => {
    const queue = freshQueue('cli-queue');
    const env = { DOCKET_TOKEN: await harness.cluster.tokenFor('queue-cli-admin', 'admin') };
    const url = ['--url', harness.cluster.admission.url];
    expect(await runDocket(['queue', 'set', queue, '--max-concurrency', '5', '--rate', '10/1s', ...url], env)).toMatchObject({
      code: 0,
      stdout: `${queue}: max concurrency 5, rate 10/1s, running\n`,
    });
    expect((await runDocket(['queue', 'pause', queue, ...url], env)).stdout).toBe(`${queue}: max concurrency 5, rate 10/1s, PAUSED\n`);
    await harness.submit({ queue });
    const read = await runDocket(['queue', 'get', queue, ...url], env);
    expect(read.code).toBe(0);
    expect(read.stdout).toMatch(new RegExp(`^${queue}: max concurrency 5, rate 10/1s, PAUSED\n  QUEUED 1; 0 running attempts; oldest queued \\d+s\n$`));
    expect((await runDocket(['queue', 'resume', queue, ...url], env)).stdout).toBe(`${queue}: max concurrency 5, rate 10/1s, running\n`);
    const refused = await runDocket(['queue', 'pause', queue, ...url], { DOCKET_TOKEN: harness.ownerToken });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('permission_denied');
    expect((await admin.getQueue({ queue })).policy?.paused).toBe(false);
  });
});

describe('flow control', () => {
  it('a paused queue admits jobs but hands none out; resuming wakes a claimer that is waiting', async () => {
    const queue = freshQueue('paused');
    await admin.setQueuePolicy({ queue, paused: true });
    const job = await harness.submit({ queue });
    const worker = await workerOn(queue);
    expect(await worker.claim({ maxJobs: 1, waitMs: 1_500 })).toEqual([]);
    expect((await harness.jobRow(job.id)).status).toBe('QUEUED');

    const waiting = worker.claim({ maxJobs: 1, waitMs: 20_000 });
    // Real time: nothing outside the execution service shows that a claim has begun to wait; give it time to.
    await sleep(500);
    const resumedAt = performance.now();
    await admin.setQueuePolicy({ queue, paused: false });
    const [assignment] = await waiting;
    expect(assignment?.envelope?.jobId).toBe(job.id);
    // A waiting claimer looks again at least every second while its queue is paused.
    expect(performance.now() - resumedAt).toBeLessThan(10_000);
  });

  it('holds a rate limit of 10 jobs a second over 30 s with 16 workers, counted from the attempts table', async () => {
    const queue = freshQueue('rate');
    await admin.setQueuePolicy({ queue, rateLimit: { jobs: 10, per: durationFromMs(1_000) } });
    await Promise.all(Array.from({ length: 400 }, () => harness.submit({ queue })));
    const workers = await Promise.all(Array.from({ length: 16 }, () => workerOn(queue, 1)));
    const began = performance.now();
    let done = 0;
    await Promise.all(
      workers.map(async (worker) => {
        while (performance.now() - began < 30_000) {
          for (const assignment of await worker.claim({ maxJobs: 1, waitMs: 1_000 })) {
            await worker.expectOk('reportOutcome', { attempt: attemptOf(assignment), operationId: newOperationId(), outcome: { case: 'success', value: {} } });
            done += 1;
          }
        }
      }),
    );
    const { rows } = await harness.sql.query<{ started_at: Date }>(
      'select a.started_at from attempts a join jobs j on j.id = a.job_id where j.queue = $1 order by a.started_at',
      [queue],
    );
    const starts = rows.map((row) => row.started_at.getTime());
    expect(starts.length).toBe(done);
    const first = starts[0]!;
    const within = (from: number, ms: number) => starts.filter((at) => at >= from && at < from + ms).length;
    // The bucket holds 10 and refills 10 a second: at most 10 + 10 * t in any window of t seconds, and the rate is used.
    for (const at of starts) {
      expect(within(at, 1_000)).toBeLessThanOrEqual(20);
      expect(within(at, 5_000)).toBeLessThanOrEqual(60);
    }
    const inThirty = within(first, 30_000);
    expect(inThirty).toBeLessThanOrEqual(310);
    expect(inThirty).toBeGreaterThanOrEqual(250);
    // Steady state: the whole seconds after the first hold close to 10 claims. A stall of
    // the loaded machine (other test files share its two cores) leaves a second short and
    // lets the next spend what the bucket saved meanwhile (the bounds above), so the typical
    // second is what is held to 10, and most seconds, not all, reach 8.
    const perSecond = Array.from({ length: 28 }, (_, second) => within(first + (second + 1) * 1_000, 1_000));
    const median = [...perSecond].sort((a, b) => a - b)[14]!;
    expect(median).toBeGreaterThanOrEqual(9);
    expect(median).toBeLessThanOrEqual(11);
    expect(perSecond.filter((count) => count >= 8).length).toBeGreaterThanOrEqual(20);
  }, 90_000);

  it('runs at most 2 attempts per concurrency key and rotates across keys, so 1,000 jobs of one tenant do not hold back another tenant\'s first job by more than 1.5 s', async () => {
    const queue = freshQueue('keys');
    await admin.setQueuePolicy({ queue, perKeyConcurrency: 2 });
    const heavy = 'tenant-a';
    for (let batch = 0; batch < 20; batch += 1) {
      await Promise.all(Array.from({ length: 50 }, () => harness.submit({ queue, concurrencyKey: heavy })));
    }
    // Two workers, fewer than the keys' room (5 tenants x 2): only the rotation can give the later tenants a turn.
    const workers = await Promise.all(Array.from({ length: 2 }, () => workerOn(queue, 1)));
    let stop = false;
    const sampler = sampleActivePerKey(queue);
    const running = workers.map((worker) => workUntil(worker, () => stop));
    await until(async () => {
      const { rows } = await harness.sql.query<{ n: number }>('select count(*)::int as n from attempts where queue = $1', [queue]);
      return rows[0]!.n >= 4;
    }, "tenant-a's backlog to be worked off");
    // The other tenants arrive while tenant-a's backlog is being worked off (and one job without a key, which is the empty key).
    const light = ['tenant-b', 'tenant-c', 'tenant-d', 'tenant-e'];
    const firsts = await Promise.all([...light.map((concurrencyKey) => harness.submit({ queue, concurrencyKey })), harness.submit({ queue })]);
    await Promise.all(light.map((concurrencyKey) => Promise.all(Array.from({ length: 4 }, () => harness.submit({ queue, concurrencyKey })))));
    // Real time: the workers run for a measured 4 s of mixed backlog, over which the limits and the turns are judged.
    await sleep(4_000);
    stop = true;
    await Promise.all(running);
    const peaks = await sampler.stop();

    const { rows } = await harness.sql.query<{ key: string | null; started_at: Date; job_id: string; created_at: Date }>(
      `select j.concurrency_key as key, a.started_at, a.job_id, j.created_at
       from attempts a join jobs j on j.id = a.job_id where j.queue = $1 order by a.started_at`,
      [queue],
    );
    // No key (the empty one included) ever had more than 2 attempts at once; tenant-a reached its 2.
    expect(new Set(rows.map((row) => row.key ?? ''))).toEqual(new Set([heavy, ...light, '']));
    expect(Math.max(...peaks.values())).toBeLessThanOrEqual(2);
    expect(peaks.get(heavy)).toBe(2);
    // Every other tenant's first job started within 1.5 s of its submission, although 900+ jobs of tenant-a were queued before it.
    for (const job of firsts) {
      const attempt = rows.find((row) => row.job_id === job.id);
      expect(attempt, job.concurrencyKey).toBeDefined();
      expect(attempt!.started_at.getTime() - attempt!.created_at.getTime(), job.concurrencyKey).toBeLessThan(1_500);
    }
    // And tenant-a still had its turns meanwhile: the rotation gave it starts among the other tenants' (an order, whatever the machine's speed).
    const lightStarts = rows.flatMap((row, index) => (row.key === heavy ? [] : [index]));
    const heavyAmongLight = rows.slice(lightStarts[0], lightStarts.at(-1)).filter((row) => row.key === heavy).length;
    expect(heavyAmongLight).toBeGreaterThanOrEqual(2);
    expect((await admin.getQueue({ queue })).policy?.perKeyConcurrency).toBe(2);
  }, 90_000);

  it('never runs more than per_key_concurrency attempts of one key, however many workers are idle', async () => {
    const queue = freshQueue('key-limit');
    await admin.setQueuePolicy({ queue, perKeyConcurrency: 2 });
    await Promise.all(Array.from({ length: 60 }, () => harness.submit({ queue, concurrencyKey: 'only-tenant' })));
    // Workers that ask for 4 jobs at a time: each claim would take a key's whole room, and more, if it were not counted.
    const workers = await Promise.all(Array.from({ length: 4 }, () => workerOn(queue, 4)));
    const sampler = sampleActivePerKey(queue);
    const began = performance.now();
    await Promise.all(workers.map((worker) => workUntil(worker, () => performance.now() - began > 3_000, 4)));
    const peaks = await sampler.stop();
    expect(peaks).toEqual(new Map([['only-tenant', 2]]));
  }, 60_000);
});

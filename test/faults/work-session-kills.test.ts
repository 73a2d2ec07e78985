import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { createWorker, type Worker } from '@docket/worker-sdk';
import { clientFor } from '../support/clients.js';
import { startCluster, stopAll, type DocketCluster } from '../support/cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { newIdempotencyKey } from '../support/keys.js';
import { until } from '../support/polling.js';

/*
 * The worker session survives its service (issue 35: "kill -9 of execution
 * and of state mid-stream ... a dropped stream resumed without lost or
 * repeated reports"). An SDK worker on its default Work stream runs 240
 * jobs of 20 ms each, 8 at a time; meanwhile execution is killed (-9) and
 * restarted, then drained and restarted (SIGTERM), then state is killed
 * (-9) and restarted. Each cut loses the stream with calls on it: the SDK
 * sends them again on a new session, same operation ids. Afterwards every
 * job SUCCEEDED through exactly one attempt, its handler ran once, its
 * journal holds one `job.succeeded`. The SDK's warnings (its retries)
 * are kept: at least one cut must have cost it a call, or the test proved
 * nothing.
 */

const JOBS = 240;
const QUEUE = 'session-kills';

let cluster: DocketCluster;
let sql: pg.Pool;
let worker: Worker | undefined;

beforeAll(async () => {
  cluster = await startCluster({ databaseUrl: await createMigratedTestDatabase('work session kills') });
  sql = new pg.Pool({ connectionString: cluster.databaseUrl, max: 2 });
});

afterAll(async () => {
  await worker?.stop();
  await sql?.end();
  await stopAll();
});

describe('a worker session cut by kill -9 of execution and state, and by a drain', () => {
  it('resumes on a new session: every job once, one attempt, one outcome', async () => {
    const admission = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor('session-kills-owner', 'user'));
    const ran = new Map<string, number>();
    const retries: string[] = [];
    worker = createWorker({
      url: cluster.execution.url,
      token: await cluster.tokenFor('session-kills-worker', 'worker'),
      name: 'session-kills',
      queues: [QUEUE],
      concurrency: 8,
      claimWaitMs: 2_000,
      callTimeoutMs: 3_000,
      logger: {
        info: () => {},
        warn: (message) => retries.push(message),
        error: (message) => retries.push(message),
      },
      handler: async (job) => {
        ran.set(job.jobId, (ran.get(job.jobId) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, 20)); // Real time: the work keeps attempts open while the cuts land.
        return { id: job.jobId };
      },
    });
    await worker.start();

    const ids: string[] = [];
    for (let start = 0; start < JOBS; start += 40) {
      const submitted = await Promise.all(
        Array.from({ length: 40 }, (_, index) => admission.submitJob({ idempotencyKey: newIdempotencyKey(`sk-${start + index}`), queue: QUEUE, input: { n: start + index } })),
      );
      ids.push(...submitted.map((answer) => answer.job!.id));
    }

    const succeeded = async (): Promise<number> =>
      Number((await sql.query<{ n: string }>("select count(*) as n from jobs where queue = $1 and status = 'SUCCEEDED'", [QUEUE])).rows[0]!.n);
    const cut = async (after: number, what: () => Promise<unknown>): Promise<void> => {
      await until(async () => (await succeeded()) >= after, `${after} jobs to succeed before the next cut`, 60_000);
      await what();
    };
    await cut(20, async () => {
      await cluster.execution.kill();
      await cluster.execution.restart();
    });
    await cut(80, () => cluster.execution.restart()); // SIGTERM: a drain, then a new process
    await cut(140, async () => {
      await cluster.state.kill();
      await cluster.state.restart();
    });
    await until(async () => (await succeeded()) === JOBS, 'every job to succeed', 120_000);
    await worker.drain();
    worker = undefined;

    const attempts = await sql.query<{ job_id: string; n: string; succeeded: string }>(
      "select job_id, count(*) as n, count(*) filter (where status = 'SUCCEEDED') as succeeded from attempts where job_id = any($1) group by job_id",
      [ids],
    );
    expect(attempts.rows).toHaveLength(JOBS);
    expect(attempts.rows.filter((row) => row.n !== '1' || row.succeeded !== '1')).toEqual([]);
    expect([...ran.values()].filter((count) => count !== 1)).toEqual([]);
    expect(ran.size).toBe(JOBS);
    const outcomes = await sql.query<{ job_id: string; n: string }>(
      "select job_id, count(*) as n from job_events where job_id = any($1) and type = 'job.succeeded' group by job_id",
      [ids],
    );
    expect(outcomes.rows.filter((row) => row.n !== '1')).toEqual([]);
    expect(outcomes.rows).toHaveLength(JOBS);
    expect(retries.length, 'the cuts cost the SDK calls it sent again').toBeGreaterThan(0);
  });
});

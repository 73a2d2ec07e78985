import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, stopAll, type DocketCluster } from '../support/cluster.js';
import { createTestDatabase } from '../support/database.js';
import { ExecutionHarness, freshQueue } from '../support/raw-worker-harness.js';
import { attemptOf, newOperationId } from '../support/raw-worker.js';

/*
 * A lease is judged when the job's row lock is held, not when the
 * transaction began: a RenewAttempt that waited on the lock until after
 * its lease expired must be refused (STALE_AUTHORITY) and extend nothing,
 * or a worker the reaper is about to supersede could keep a job it no
 * longer owns.
 */

const LEASE_MS = 2_000;
let cluster: DocketCluster;
let harness: ExecutionHarness;

beforeAll(async () => {
  cluster = await startCluster({
    databaseUrl: await createTestDatabase('renew after lock wait'),
    env: { state: { DOCKET_LEASE_MS: String(LEASE_MS) }, execution: { DOCKET_BACKGROUND_LOOPS: 'off' } },
  });
  harness = await ExecutionHarness.open(cluster, 'renew-lock-owner');
});

afterAll(async () => {
  await harness?.close();
  await stopAll();
});

describe('a renewal that waits for the job lock past its lease', () => {
  it('is refused with STALE_AUTHORITY and leaves the lease where it was; one that does not wait is accepted', async () => {
    const queue = freshQueue('renew-lock');
    const worker = await harness.worker();
    await worker.register('renew-lock-worker', [queue], 1);
    const job = await harness.submit({ queue });
    const [assignment] = await worker.claim({ waitMs: 5_000 });
    expect(assignment?.envelope?.jobId).toBe(job.id);
    const attempt = attemptOf(assignment!);

    // Without a wait, a renewal is accepted (the same call as below, so the refusal is about the wait).
    await worker.expectOk('renewAttempt', { attempt, operationId: newOperationId() });
    const renewed = await harness.jobRow(job.id);

    // Hold the job's row lock until the lease has certainly expired, while the worker renews.
    const blocker = await harness.sql.connect();
    try {
      await blocker.query('begin');
      await blocker.query('select 1 from jobs where id = $1 for update', [job.id]);
      const { rows } = await blocker.query<{ wait_ms: number }>(
        "select greatest(0, extract(epoch from (lease_expires_at - clock_timestamp())) * 1000)::float8 as wait_ms from jobs where id = $1",
        [job.id],
      );
      const renewal = worker.call('renewAttempt', { attempt, operationId: newOperationId() });
      await new Promise((resolve) => setTimeout(resolve, rows[0]!.wait_ms + 500));
      await blocker.query('commit');
      const answer = await renewal;
      expect(answer).toMatchObject({ ok: false, reason: 'STALE_AUTHORITY' });
    } finally {
      blocker.release();
    }
    const after = await harness.jobRow(job.id);
    expect(after.lease_expires_at).toEqual(renewed.lease_expires_at);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessCluster } from '../support/in-process-cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { until } from '../support/polling.js';
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
let harness: ExecutionHarness;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'renew-lock-owner', {
    databaseUrl: await createMigratedTestDatabase('renew after lock wait'),
    env: { state: { DOCKET_LEASE_MS: String(LEASE_MS) }, execution: { DOCKET_BACKGROUND_LOOPS: 'off' } },
  });
});

afterAll(() => harness?.close());

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
      const { rows } = await blocker.query<{ pid: number }>('select pg_backend_pid() as pid');
      const renewal = worker.call('renewAttempt', { attempt, operationId: newOperationId() });
      // Until the lease has expired by the database clock while the renewal waits for the lock this connection holds.
      await until(async () => {
        const { rows: [seen] } = await harness.sql.query<{ expired: boolean; waiting: boolean }>(
          `select (select lease_expires_at < clock_timestamp() from jobs where id = $1) as expired,
                  exists (select 1 from pg_stat_activity where $2::int = any(pg_blocking_pids(pid))) as waiting`,
          [job.id, rows[0]!.pid],
        );
        return seen?.expired === true && seen.waiting;
      }, 'the lease to expire while the renewal waits for the row lock');
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

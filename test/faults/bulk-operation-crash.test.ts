import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BulkOperationState } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { startCluster, type DocketCluster } from '../support/cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { newIdempotencyKey } from '../support/keys.js';
import { ExecutionHarness, freshQueue } from '../support/raw-worker-harness.js';
import { attemptOf, newOperationId } from '../support/raw-worker.js';

/*
 * A bulk operation is durable: RetryJobs over 200 failed jobs runs job by
 * job (20 a step, a step every 50 ms) while the state process that runs
 * the steps is killed with SIGKILL twice mid-way. It resumes from the
 * items still pending each time and completes with every job retried
 * exactly once: one `job.retried` event per job, each naming the
 * operation, and the counts adding up to what it matched.
 */

const JOBS = 200;

let harness: ExecutionHarness<DocketCluster>;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startCluster, 'bulk-crash-owner', {
    databaseUrl: await createMigratedTestDatabase('bulk operation crash'),
    env: { execution: { DOCKET_BULK_INTERVAL_MS: '50', DOCKET_MAINTENANCE_BATCH: '20' } },
  });
});

afterAll(() => harness?.close());

async function handled(operationId: string): Promise<number> {
  const { rows } = await harness.sql.query<{ n: string }>('select count(*) as n from bulk_operation_items where operation_id = $1 and outcome is not null', [operationId]);
  return Number(rows[0]?.n);
}

describe('a bulk operation through SIGKILLs of the state process', () => {
  it('resumes where it stopped and retries every matched job exactly once', async () => {
    const queue = freshQueue('bulk-crash');
    const { results } = await harness.admission.submitJobs({
      items: Array.from({ length: JOBS }, (_, index) => ({ idempotencyKey: newIdempotencyKey(`bulk-crash-${index}`), queue, input: { index } })),
    });
    expect(results.every((result) => result.result.case === 'submitted')).toBe(true);
    const worker = await harness.worker();
    await worker.register(`bulk-crash-${queue}`, [queue], JOBS);
    let failed = 0;
    while (failed < JOBS) {
      const assignments = await worker.claim({ maxJobs: 100, waitMs: 1_000 });
      await Promise.all(
        assignments.map((assignment) =>
          worker.expectOk('reportOutcome', {
            attempt: attemptOf(assignment),
            operationId: newOperationId(),
            outcome: { case: 'failure', value: { failureClass: FailureClass.INVALID_INPUT, message: 'bad input' } },
          }),
        ),
      );
      failed += assignments.length;
    }

    const admin = await harness.queueAdmin();
    const { operation } = await admin.retryJobs({ idempotencyKey: newIdempotencyKey('bulk-crash'), filter: { queue } });
    expect(operation?.matched).toBe(BigInt(JOBS));
    for (const target of [50, 120]) {
      const deadline = performance.now() + 60_000;
      while ((await handled(operation!.id)) < target) {
        if (performance.now() > deadline) throw new Error(`the runner did not handle ${target} jobs`);
        // Real time: the poll interval of this wait for the runner's progress.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(await handled(operation!.id)).toBeLessThan(JOBS);
      await harness.cluster.state.kill();
      await harness.cluster.state.restart();
    }
    const deadline = performance.now() + 60_000;
    for (;;) {
      const read = await admin.getBulkOperation({ operationId: operation!.id }).catch(() => undefined);
      if (read?.operation?.state === BulkOperationState.COMPLETED) {
        expect(read.operation).toMatchObject({ matched: BigInt(JOBS), done: BigInt(JOBS), changed: BigInt(JOBS), skipped: 0n, failed: 0n });
        break;
      }
      if (performance.now() > deadline) throw new Error('the operation did not complete');
      // Real time: the poll interval of this wait for the operation to complete.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const { rows } = await harness.sql.query<{ status: string; retried: string; named: string }>(
      `select j.status, count(e.*) as retried, count(e.*) filter (where e.payload->>'bulk_operation_id' = $2) as named
       from jobs j left join job_events e on e.job_id = j.id and e.type = 'job.retried'
       where j.queue = $1 group by j.id, j.status`,
      [queue, operation!.id],
    );
    expect(rows).toHaveLength(JOBS);
    expect(rows.filter((row) => row.status !== 'QUEUED' || row.retried !== '1' || row.named !== '1')).toEqual([]);
  });
});

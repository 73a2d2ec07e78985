import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeletionState } from '@docket/proto/docket/common/v1/deletion_pb.js';
import { JobLifecycle, JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { startCluster, type DocketCluster } from './support/cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { newIdempotencyKey } from './support/keys.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';

/*
 * Hard deletion is a durable operation: a job with 100,000 journal events
 * is erased in bounded batches while the state process that runs the
 * deletion steps is killed with SIGKILL three times mid-way. It resumes
 * from what remains each time, ends HARD_DELETED with only its tombstone,
 * and the state process's memory stays flat (each step deletes at most
 * `limit` rows per table and reads none of them).
 */

const EVENTS = 100_000;
const BATCH = 500;

let harness: ExecutionHarness<DocketCluster>;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startCluster, 'crash-owner', {
    databaseUrl: await createMigratedTestDatabase('hard deletion crash'),
    env: { execution: { DOCKET_DELETION_INTERVAL_MS: '50', DOCKET_MAINTENANCE_BATCH: String(BATCH) } },
  });
});

afterAll(() => harness?.close());

/** The resident set size of a process, in MiB (Linux). */
function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((entry) => entry.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0) / 1024;
}

async function remainingEvents(jobId: string): Promise<number> {
  const { rows } = await harness.sql.query<{ n: string }>('select count(*) as n from job_events where job_id = $1', [jobId]);
  return Number(rows[0]?.n);
}

describe('hard deletion of a large job', () => {
  it('survives three SIGKILLs of the state process mid-way, ends HARD_DELETED with only the tombstone, in bounded memory', async () => {
    const job = await harness.submit({ queue: freshQueue('big'), input: { secret: 'x'.repeat(1000) } });
    await harness.admission.cancelJob({ idempotencyKey: newIdempotencyKey('cancel'), jobId: job.id });
    // 100,000 more journal rows, written directly (their hashes are not a chain: the runner never reads them).
    await harness.sql.query(
      `insert into job_events (job_id, sequence, type, payload, occurred_at, previous_hash, hash)
       select $1, g, 'worker.filler', '{"n": 1}', now(), repeat('0', 64), md5(g::text) || md5(g::text)
       from generate_series(3, $2::bigint + 2) g`,
      [job.id, EVENTS],
    );
    await harness.sql.query(`update jobs set event_count = $2::bigint, head_hash = md5($2::bigint::text) || md5($2::bigint::text) where id = $1`, [job.id, EVENTS + 2]);

    const { deletion } = await harness.admission.hardDeleteJob({ idempotencyKey: newIdempotencyKey('hard'), jobId: job.id });
    const rss: number[] = [];
    for (let kill = 1; kill <= 3; kill += 1) {
      // Let the runner get well into the journal, then crash the process running its steps.
      const target = EVENTS - kill * 25_000;
      const deadline = performance.now() + 60_000;
      while ((await remainingEvents(job.id)) > target) {
        rss.push(rssMiB(harness.cluster.state.process.pid!));
        if (performance.now() > deadline) throw new Error(`the runner did not get below ${target} events`);
        // Real time: the poll interval of this wait for the runner's progress.
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await harness.cluster.state.kill();
      await harness.cluster.state.restart();
      // Reconnect the admission client's stale channel by one call, tolerating the restart.
      await harness.admission.getDeletion({ deletionId: deletion!.deletionId }).catch(() => undefined);
    }
    const deadline = performance.now() + 120_000;
    for (;;) {
      const { deletion: now } = await harness.admission.getDeletion({ deletionId: deletion!.deletionId }).catch(() => ({ deletion: undefined }));
      if (harness.cluster.state.process.pid) rss.push(rssMiB(harness.cluster.state.process.pid));
      if (now?.state === DeletionState.COMPLETED) {
        expect(now.attemptCount).toBeGreaterThanOrEqual(1);
        break;
      }
      if (performance.now() > deadline) throw new Error(`deletion is ${now ? DeletionState[now.state] : 'unreachable'}`);
      // Real time: the poll interval of this wait for the deletion.
      await new Promise((resolve) => setTimeout(resolve, 200));
    }

    for (const table of ['job_events', 'job_signals', 'job_effects', 'attempts']) {
      const { rows } = await harness.sql.query<{ n: string }>(`select count(*) as n from ${table} where job_id = $1`, [job.id]);
      expect(Number(rows[0]?.n), table).toBe(0);
    }
    const feed = await harness.sql.query<{ lifecycle: string }>('select lifecycle from job_changes where job_id = $1', [job.id]);
    expect(feed.rows).toEqual([{ lifecycle: 'HARD_DELETED' }]);
    const row = await harness.sql.query('select input, label, result, checkpoint, lifecycle, status from jobs where id = $1', [job.id]);
    expect(row.rows).toEqual([{ input: {}, label: '', result: null, checkpoint: null, lifecycle: 'HARD_DELETED', status: 'CANCELLED' }]);
    const { job: tombstone } = await harness.admission.getJob({ jobId: job.id });
    expect(tombstone).toMatchObject({ id: job.id, status: JobStatus.CANCELLED, lifecycle: JobLifecycle.HARD_DELETED, deletionId: deletion!.deletionId });

    const spread = Math.max(...rss) - Math.min(...rss);
    console.log(`state RSS over ${rss.length} samples: ${Math.min(...rss).toFixed(0)}..${Math.max(...rss).toFixed(0)} MiB (spread ${spread.toFixed(0)} MiB)`);
    // Bounded: each step touches at most BATCH rows per table and holds none of them.
    expect(Math.max(...rss)).toBeLessThan(400);
  }, 300_000);
});

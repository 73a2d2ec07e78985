import { existsSync } from 'node:fs';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { clientFor } from './support/clients.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startInProcessCluster, stopInProcessClusters } from './support/in-process-cluster.js';
import { PGBOUNCER, startPgBouncer, type PgBouncer } from './support/pgbouncer.js';
import { attemptOf, newOperationId } from './support/raw-worker.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';

/*
 * Docket through PgBouncer (Debian's 1.18), configured with nothing but
 * its pool mode (docs/high-availability.md, "PgBouncer"). In session mode
 * the state service needs no setting at all: it sends no startup
 * parameter PgBouncer would refuse, and its named statements and LISTEN
 * live in the session. In transaction mode consecutive transactions of one
 * connection run on different server sessions (here two server
 * connections serve ten), so DOCKET_DATABASE_POOLING=transaction makes
 * every statement unnamed, and LISTEN and the migrations' session lock use
 * DOCKET_DIRECT_DATABASE_URL. Each mode runs the whole path of a job:
 * 24 concurrent submissions, a claim already waiting when they arrive
 * (woken through LISTEN), the outcomes (in small batches, several
 * transactions at once), 24 concurrent reads, and every journal read back
 * and verified by the events service. (With named statements, the
 * transaction pool fails this at once: "prepared statement ... already
 * exists" on a server session another connection prepared it on.)
 */

let bouncer: PgBouncer | undefined;
let databaseUrl: string;

const haveBouncer = existsSync(PGBOUNCER);

beforeAll(async () => {
  databaseUrl = await createMigratedTestDatabase('pgbouncer');
  if (haveBouncer) bouncer = await startPgBouncer(databaseUrl);
});

afterAll(async () => {
  await stopInProcessClusters();
  await bouncer?.stop();
});

const modes = [
  { mode: 'session', env: () => ({ DOCKET_DATABASE_URL: bouncer!.sessionUrl }) },
  {
    mode: 'transaction',
    env: () => ({ DOCKET_DATABASE_URL: bouncer!.transactionUrl, DOCKET_DATABASE_POOLING: 'transaction', DOCKET_DIRECT_DATABASE_URL: databaseUrl }),
  },
] as const;

describe.each(modes)('Docket through PgBouncer in $mode mode', ({ mode, env }) => {
  (haveBouncer ? it : it.skip)('admits, wakes a waiting claim, completes and journals every job', async () => {
    // Small batches, several in flight: the state service works on many connections at once, which the
    // transaction pool's two server connections serve in turns.
    const concurrent = { DOCKET_ADMIT_BATCH_MAX: '2', DOCKET_ADMIT_BATCHES_IN_FLIGHT: '6', DOCKET_REPORT_BATCH_MAX: '2', DOCKET_WORKER_BATCHES_IN_FLIGHT: '6' };
    const cluster = await startInProcessCluster({ databaseUrl, env: { state: { ...concurrent, ...env() } } });
    const harness = await ExecutionHarness.open(cluster, `bouncer-${mode}`);
    try {
      const queue = freshQueue(`bouncer-${mode}`);
      const execution = clientFor(ExecutionService, cluster.execution.url, harness.workerToken);
      const { workerIncarnation } = await execution.registerWorker({ workerName: `bouncer-${mode}`, queues: [queue], maxConcurrency: 32 });
      // A claim waits before anything is queued: only a NOTIFY through the state service's LISTEN wakes it in time.
      const waiting = execution.claimJobs({ workerIncarnation, queues: [queue], maxJobs: 1, wait: durationFromMs(20_000), operationId: newOperationId() });
      const jobs = await Promise.all(Array.from({ length: 24 }, (_, n) => harness.submit({ queue, input: { n } })));
      const startedWaiting = performance.now();
      const first = await waiting;
      expect(first.assignments).toHaveLength(1);
      expect(performance.now() - startedWaiting, 'the waiting claim was woken, not timed out').toBeLessThan(15_000);

      const assignments = [...first.assignments];
      while (assignments.length < jobs.length) {
        const { assignments: more } = await execution.claimJobs({ workerIncarnation, queues: [queue], maxJobs: 8, operationId: newOperationId() });
        expect(more.length, 'claims keep finding the queued jobs').toBeGreaterThan(0);
        assignments.push(...more);
      }
      await Promise.all(
        assignments.map((assignment) =>
          execution.reportOutcome({ attempt: attemptOf(assignment), operationId: newOperationId(), outcome: { case: 'success', value: { result: { mode } } } }),
        ),
      );

      // Reads in parallel too: each is a statement of its own on whichever connection is free.
      const read = await Promise.all(jobs.map((job) => harness.admission.getJob({ jobId: job.id })));
      expect(read.map((answer) => answer.job?.id)).toEqual(jobs.map((job) => job.id));
      const events = clientFor(EventService, cluster.events.url, harness.ownerToken);
      for (const job of jobs) {
        expect((await harness.jobRow(job.id)).status).toBe('SUCCEEDED');
        // ReadJobEvents verifies every link it serves against the job's head.
        const page = await events.readJobEvents({ jobId: job.id, afterSequence: 0n, pageSize: 10 });
        expect(page.events.map((event) => event.type)).toEqual(['job.admitted', 'attempt.started', 'job.succeeded']);
      }
    } finally {
      await harness.close();
      await cluster.stop();
    }
  });
});

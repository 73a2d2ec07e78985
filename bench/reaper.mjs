// The reaper's settlement latency after lease expiry, with the default 1 s
// reaper interval and 30 s lease: claims REAPED_JOBS jobs and abandons them;
// once the reaper has settled them all, reads from the database how long
// after each lease's end its attempt was settled (both instants by the
// database clock). In-process, not in the default set (it waits out a
// lease): `npm run bench -- --only reaper`. It reads Docket's `attempts`
// table directly, so it follows that table's schema.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { jobInput, jobKey } from './load/jobs.mjs';
import { clientWith, quantile, runConcurrently, startSystem } from './support.mjs';

const REAPED_JOBS = Number(process.env.BENCH_REAPED_JOBS ?? 200);

const operationId = () => `op_${randomBytes(16).toString('base64url')}`;

export async function benchReaper(options) {
  const system = await startSystem(['state', 'admission', 'execution'], options);
  const sql = new pg.Client({ connectionString: system.databaseUrl });
  try {
    const admission = clientWith(AdmissionService, system.urls.admission[0], await system.token('bench'));
    const execution = clientWith(ExecutionService, system.urls.execution[0], await system.token('bench-reaped', 'worker'));
    const queue = `reaped-${randomBytes(3).toString('hex')}`;
    await runConcurrently(REAPED_JOBS, 32, (index) => admission.submitJob({ idempotencyKey: jobKey(`reaper-${queue}`, index), queue, input: jobInput(index) }));
    const { workerIncarnation, leaseDuration } = await execution.registerWorker({ workerName: 'abandoner', queues: [queue], maxConcurrency: 1000 });
    let claimed = 0;
    while (claimed < REAPED_JOBS) {
      const { assignments } = await execution.claimJobs({ workerIncarnation, maxJobs: 100, wait: { seconds: 1n }, operationId: operationId() });
      claimed += assignments.length;
    }
    const leaseMs = Number(leaseDuration.seconds) * 1000 + leaseDuration.nanos / 1e6;
    await sql.connect();
    for (;;) {
      const { rows } = await sql.query(`select count(*)::int as live from attempts where queue = $1 and status = 'ACTIVE'`, [queue]);
      if (rows[0].live === 0) break;
      await sleep(250);
    }
    const { rows } = await sql.query(
      `select extract(epoch from (ended_at - (started_at + make_interval(secs => $2 / 1000.0)))) * 1000 as late_ms
         from attempts where queue = $1`,
      [queue, leaseMs],
    );
    const latencies = rows.map((row) => Number(row.late_ms));
    return [
      {
        name: `reaper settlement after lease expiry (${REAPED_JOBS} leases, interval 1 s, lease ${leaseMs / 1000} s)`,
        'median ms': quantile(latencies, 0.5).toFixed(1),
        'p99 ms': quantile(latencies, 0.99).toFixed(1),
        'max ms': Math.max(...latencies).toFixed(1),
      },
    ];
  } finally {
    await sql.end().catch(() => undefined);
    await system.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.table(await benchReaper());

// Admission throughput and latency, measured side by side in one run:
// new submissions (each one transaction: binding, job, event) against
// replays of existing keys (one indexed read), through real admission and
// state processes on an embedded PostgreSQL.
import { randomBytes } from 'node:crypto';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { clientWith, quantile, runConcurrently, startSystem } from './support.mjs';

const TOTAL = Number(process.env.BENCH_SUBMISSIONS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);

export async function benchAdmission() {
  const system = await startSystem(['state', 'admission']);
  try {
    const token = await system.token('bench');
    const admission = clientWith(AdmissionService, system.urls.admission[0], token);
    const keys = Array.from({ length: TOTAL }, (_, i) => `bench-${i}-${randomBytes(8).toString('hex')}`);
    const request = (i) => ({ idempotencyKey: keys[i], queue: 'bench', input: { n: i, payload: 'x'.repeat(200) } });

    await runConcurrently(100, 16, (i) => admission.submitJob({ ...request(i), idempotencyKey: `warmup-${i}-${keys[i]}` }));
    const fresh = await runConcurrently(TOTAL, CONCURRENCY, (i) => admission.submitJob(request(i)));
    const replays = await runConcurrently(TOTAL, CONCURRENCY, (i) => admission.submitJob(request(i)));
    const row = (name, run) => ({
      name,
      'calls/s': Math.round((TOTAL / run.elapsedMs) * 1000),
      'median ms': quantile(run.latencies, 0.5).toFixed(2),
      'p99 ms': quantile(run.latencies, 0.99).toFixed(2),
    });
    return [row(`SubmitJob, new key (c=${CONCURRENCY})`, fresh), row(`SubmitJob, replay (c=${CONCURRENCY})`, replays)];
  } finally {
    await system.stop();
  }
}

// Journal append throughput through the state service: TransitionJob
// (events only) with one event and with 64-event batches, many jobs in
// parallel, all in one run so the rows compare. In-process, not in the
// default set: `npm run bench -- --only journal`.
import { randomBytes } from 'node:crypto';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { clientWith, quantile, runConcurrently, startSystem } from './support.mjs';

const CALLS = Number(process.env.BENCH_APPENDS ?? 2000);
const CONCURRENCY = 32;
const JOBS = 64;

export async function benchJournal(options) {
  const system = await startSystem(['state', 'admission'], options);
  try {
    const admission = clientWith(AdmissionService, system.urls.admission[0], await system.token('bench'));
    const state = clientWith(StateService, system.urls.state[0], await system.token('docket-internal', 'service'));
    const jobIds = [];
    for (let i = 0; i < JOBS; i += 1) {
      const { job } = await admission.submitJob({ idempotencyKey: `journal-${i}-${randomBytes(8).toString('hex')}`, queue: 'bench' });
      jobIds.push(job.id);
    }
    const caller = { subject: 'bench' };
    const append = (batch) => (i) =>
      state.transitionJob({
        caller,
        jobId: jobIds[i % JOBS],
        events: Array.from({ length: batch }, (_, n) => ({ type: 'worker.step', payload: { i, n, note: 'x'.repeat(100) } })),
      });
    const rows = [];
    for (const batch of [1, 64]) {
      const calls = batch === 1 ? CALLS : Math.ceil(CALLS / 8);
      const run = await runConcurrently(calls, CONCURRENCY, append(batch));
      rows.push({
        name: `TransitionJob append, ${batch} event(s)/call (c=${CONCURRENCY}, ${JOBS} jobs)`,
        'calls/s': Math.round((calls / run.elapsedMs) * 1000),
        'events/s': Math.round(((calls * batch) / run.elapsedMs) * 1000),
        'median ms': quantile(run.latencies, 0.5).toFixed(2),
        'p99 ms': quantile(run.latencies, 0.99).toFixed(2),
      });
    }
    return rows;
  } finally {
    await system.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.table(await benchJournal());

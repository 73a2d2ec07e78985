// `node bench/mutation-ab.mjs <rootA> <rootB> [rounds]`: the latency of one
// mutation through admission, for two built checkouts compared in one run.
// Starts the durable PostgreSQL, then state + admission from `rootA` and
// from `rootB` on the same database; each side submits a job of its own,
// then PauseJob and ResumeJob alternate on it, one call at a time, 100
// calls a round, `rounds` rounds a side (default 11) after one untimed
// round each, the sides taking turns (which goes first alternates). Prints
// each side's median call latency, the CPU its state and admission
// processes spent per call (from /proc), and B's median over A's with how
// many rounds B's round median was the lower.
//
// One call at a time makes the figure the path's own latency, round trips
// included, which is what the streams benchmark's PauseJob/ResumeJob rows
// measure; runs minutes apart on this machine differ by more than most
// changes, so compare within one run. Pass the same root twice for an A/A
// run (what noise alone gives).
import { randomBytes } from 'node:crypto';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { clientWith } from './docket/clients.mjs';
import { launchDocket } from './docket/instance.mjs';
import { startDurablePostgres } from './postgres.mjs';
import { cpuMsOf } from './process-cpu.mjs';
import { quantile } from './stats.mjs';

const [rootA, rootB] = process.argv.slice(2, 4);
if (!rootA || !rootB) throw new Error('usage: node bench/mutation-ab.mjs <rootA> <rootB> [rounds]');
const rounds = Number(process.argv[4] ?? 11);
const CALLS_PER_ROUND = 100;

const postgres = await startDurablePostgres();
const databaseUrl = await postgres.createDatabase('mutation_ab');
const sides = [];
try {
  for (const [name, root] of [['A', rootA], ['B', rootB]]) {
    const docket = await launchDocket({ root, databaseUrl, names: ['state', 'admission'] });
    const admission = clientWith(AdmissionService, docket.urls.admission[0], await docket.token('bench'));
    const jobId = (await admission.submitJob({ idempotencyKey: `mutation-ab-${randomBytes(12).toString('hex')}`, queue: 'bench' })).job.id;
    sides.push({ name, docket, admission, jobId, paused: false, calls: [], medians: [], cpu: { state: 0, admission: 0 } });
  }
  /** One round of PauseJob/ResumeJob on `side`'s job: each call's latency, ms. */
  const round = async (side) => {
    const latencies = [];
    for (let call = 0; call < CALLS_PER_ROUND; call += 1) {
      const request = { idempotencyKey: randomBytes(12).toString('hex'), jobId: side.jobId };
      const started = performance.now();
      await (side.paused ? side.admission.resumeJob(request) : side.admission.pauseJob(request));
      latencies.push(performance.now() - started);
      side.paused = !side.paused;
    }
    return latencies;
  };
  for (const side of sides) await round(side);
  for (let turn = 0; turn < rounds; turn += 1) {
    for (const side of turn % 2 ? [...sides].reverse() : sides) {
      const pids = { state: side.docket.pids.state[0], admission: side.docket.pids.admission[0] };
      const before = { state: cpuMsOf(pids.state), admission: cpuMsOf(pids.admission) };
      const latencies = await round(side);
      side.cpu.state += cpuMsOf(pids.state) - before.state;
      side.cpu.admission += cpuMsOf(pids.admission) - before.admission;
      side.calls.push(...latencies);
      side.medians.push(quantile(latencies, 0.5));
    }
  }
  const calls = rounds * CALLS_PER_ROUND;
  for (const side of sides) {
    console.log(
      `${side.name}: PauseJob/ResumeJob median ${quantile(side.calls, 0.5).toFixed(2)} ms, p99 ${quantile(side.calls, 0.99).toFixed(2)} ms; ` +
        `CPU per call: state ${(side.cpu.state / calls).toFixed(2)} ms, admission ${(side.cpu.admission / calls).toFixed(2)} ms`,
    );
  }
  const [a, b] = sides;
  const won = b.medians.filter((median, turn) => median < a.medians[turn]).length;
  console.log(`B/A: ${(quantile(b.calls, 0.5) / quantile(a.calls, 0.5)).toFixed(3)} (medians); B faster in ${won} of ${rounds} rounds`);
} finally {
  for (const side of sides.reverse()) await side.docket.stop();
  await postgres.stop();
}

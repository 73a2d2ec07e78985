import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { printCpuProfiles } from './cpu-profile-summary.mjs';
import { clientWith } from './docket/clients.mjs';
import { launchDocket } from './docket/instance.mjs';
import { query, startDurablePostgres } from './postgres.mjs';
import { cpuMsOf } from './process-cpu.mjs';
const calls = Number(process.argv[2] ?? 400);
const profiles = mkdtempSync(join(tmpdir(), 'docket-profile-'));
const postgres = await startDurablePostgres();
const databaseUrl = await postgres.createDatabase('profile');
const prof = process.env.PROFILE !== '0';
const docket = await launchDocket({ root: new URL('..', import.meta.url).pathname, databaseUrl, names: ['state', 'admission'], nodeOptions: prof ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`] : [] });
try {
  const admission = clientWith(AdmissionService, docket.urls.admission[0], await docket.token('bench', 'user'));
  const { job } = await admission.submitJob({ idempotencyKey: `p-${randomBytes(8).toString('hex')}`, queue: 'bench' });
  let paused = false;
  const run = async (n) => { for (let i = 0; i < n; i++) { const r = { idempotencyKey: `k-${randomBytes(8).toString('hex')}`, jobId: job.id }; await (paused ? admission.resumeJob(r) : admission.pauseJob(r)); paused = !paused; } };
  await run(50);
  await query(databaseUrl, 'create extension if not exists pg_stat_statements'); await query(databaseUrl, 'select pg_stat_statements_reset()');
  const b = { s: cpuMsOf(docket.pids.state[0]), a: cpuMsOf(docket.pids.admission[0]), c: process.cpuUsage() };
  const t = performance.now();
  await run(calls);
  const wall = performance.now() - t;
  const c = process.cpuUsage(b.c);
  console.log(`median-ish ${(wall / calls).toFixed(2)} ms/call; state ${((cpuMsOf(docket.pids.state[0]) - b.s) / calls).toFixed(2)} ms/call, admission ${((cpuMsOf(docket.pids.admission[0]) - b.a) / calls).toFixed(2)}, client ${((c.user + c.system) / 1000 / calls).toFixed(2)}`);
  console.table(await query(databaseUrl, `select calls, round(total_exec_time::numeric,1) total_ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) q from pg_stat_statements order by calls desc limit 25`));
} finally {
  await docket.stop();
  await postgres.stop();
}
if (prof) printCpuProfiles(profiles, { count: calls, name: 'call' });

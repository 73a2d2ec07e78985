import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { printCpuProfiles } from './cpu-profile-summary.mjs';
import { clientWith } from './docket/clients.mjs';
import { launchDocket } from './docket/instance.mjs';
import { forkGenerator } from './generator-host.mjs';
import { startDurablePostgres } from './postgres.mjs';
import { cpuMsOf } from './process-cpu.mjs';
const dir = mkdtempSync('/tmp/fanout-');
const prof = process.env.PROFILE !== '0';
const postgres = await startDurablePostgres();
const databaseUrl = await postgres.createDatabase('fanout');
const docket = await launchDocket({ root: new URL('..', import.meta.url).pathname, databaseUrl, names: ['state', 'admission', 'events'], nodeOptions: prof ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [] });
let child;
const calls = Number(process.argv[2] ?? 300);
try {
  const admission = clientWith(AdmissionService, docket.urls.admission[0], await docket.token('bench'));
  const { job } = await admission.submitJob({ idempotencyKey: `h-${randomBytes(8).toString('hex')}`, queue: 'bench' });
  child = forkGenerator('subscribe.mjs', { url: docket.urls.events[0], token: await docket.token('bench'), jobIds: [], watchers: Number(process.argv[3] ?? 1000) });
  await child.ready;
  await sleep(2000);
  let paused = false;
  const ev = docket.pids.events[0];
  const before = cpuMsOf(ev);
  const t = performance.now();
  for (let i = 0; i < calls; i++) { const r = { idempotencyKey: `k-${randomBytes(8).toString('hex')}`, jobId: job.id }; await (paused ? admission.resumeJob(r) : admission.pauseJob(r)); paused = !paused; }
  await sleep(1000);
  console.log(`${((performance.now() - t) / calls).toFixed(2)} ms per call; events ${((cpuMsOf(ev) - before) / calls).toFixed(2)} ms CPU per call`);
  console.log(JSON.stringify(await child.start()));
} finally {
  await child?.stop();
  await docket.stop();
  await postgres.stop();
}
if (prof) printCpuProfiles(dir, { count: calls, name: 'call' });

import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { clientWith } from './docket/clients.mjs';
import { launchDocket } from './docket/instance.mjs';
import { forkGenerator } from './generator-host.mjs';
import { startDurablePostgres } from './postgres.mjs';
const postgres = await startDurablePostgres();
const databaseUrl = await postgres.createDatabase('heap');
const docket = await launchDocket({ root: new URL('..', import.meta.url).pathname, databaseUrl, names: ['state', 'admission', 'events'], nodeOptions: ['--heapsnapshot-signal=SIGUSR1', `--diagnostic-dir=/tmp/heap`] });
try {
  const admission = clientWith(AdmissionService, docket.urls.admission[0], await docket.token('bench'));
  const ids = [];
  for (let i = 0; i < 200; i++) ids.push((await admission.submitJob({ idempotencyKey: `h-${randomBytes(8).toString('hex')}`, queue: 'bench' })).job.id);
  const jobIds = Array.from({ length: 10 }, () => ids).flat();
  const child = forkGenerator('subscribe.mjs', { url: docket.urls.events[0], token: await docket.token('bench'), jobIds, watchers: 200 });
  await child.ready;
  await sleep(3000);
  process.kill(docket.pids.events[0], 'SIGUSR1');
  await sleep(15000);
  console.log(readdirSync('/tmp/heap'));
  await child.stop();
} finally {
  await docket.stop();
  await postgres.stop();
}

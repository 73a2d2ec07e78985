import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, it } from 'vitest';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { clientFor } from './support/clients.js';
import { startCluster, stopAll } from './support/cluster.js';
import { createTestDatabase } from './support/database.js';
import { JobWriter, submitJobs } from './support/job-writer.js';

afterAll(stopAll);
it('scratch', async () => {
  const cluster = await startCluster({ databaseUrl: await createTestDatabase('scratch'), env: { events: { DOCKET_HEARTBEAT_MS: '1000' }, state: { DOCKET_SHUTDOWN_GRACE_MS: '2000' } } });
  const alice = await cluster.tokenFor('alice', 'user');
  const ids = await submitJobs(cluster.admission.url, alice, 5);
  const events = clientFor(EventService, cluster.events.url, alice);
  const states: string[] = [];
  void Promise.all(Array.from({ length: 5 }, async (_, i) => {
    try { for await (const f of events.streamJobEvents({ jobId: ids[i % 5]! })) { states.push(`${i}:${f.frame.case}:${performance.now().toFixed(0)}`); } states.push('ok'); }
    catch (e) { states.push(String((e as Error).message).slice(0, 60)); }
  }));
  await sleep(1000);
  const t0 = performance.now();
  const old = cluster.state;
  console.log('restart at', t0.toFixed(0));
  await cluster.state.restart();
  console.log('restart took', performance.now() - t0);
  const writer = new JobWriter(cluster.state.url, cluster.serviceToken, 'alice');
  await writer.append(ids[0]!, 1);
  await sleep(1000);
  console.log(old.logs.filter((l) => !l.includes('"rpc"') || l.includes('WatchJob')).join('\n'));
  console.log(cluster.events.logs.filter((l) => !l.includes('"rpc"')).join('\n'));
  console.log(states.join('\n'));
}, 60_000);

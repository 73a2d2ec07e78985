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
  const ids = await submitJobs(cluster.admission.url, alice, 50);
  const events = clientFor(EventService, cluster.events.url, alice);
  const states: string[] = [];
  void Promise.all(Array.from({ length: 200 }, async (_, i) => {
    try { for await (const f of events.streamJobEvents({ jobId: ids[i % 50]! })) { states.push(`${i}:${f.frame.case}:${new Date().toISOString()}`); } states.push('ok'); }
    catch (e) { states.push(String((e as Error).message).slice(0, 60)); }
  }));
  await sleep(1000);
  console.log('restart at', new Date().toISOString());
  await cluster.state.restart();
  console.log('restarted at', new Date().toISOString());
  const writer = new JobWriter(cluster.state.url, cluster.serviceToken, 'alice');
  await sleep(8000);
  await writer.append(ids[0]!, 1);
  await sleep(1000);
  console.log(cluster.events.logs.filter((l) => !l.includes('"rpc"')).join('\n'));
  console.log(states.filter((s) => s.startsWith('0:') || s.startsWith('1:')).join('\n'));
}, 60_000);

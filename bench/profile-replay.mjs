// `node bench/profile-replay.mjs [events] [rounds] [root]`: where a backlog replay's
// time goes. Starts the durable PostgreSQL and state + admission + events,
// writes one journal of `events` events (default 5,000), starts the
// services again with `node --cpu-prof` (so the profiles hold the replays
// alone), settles the backlog (`vacuum analyze`, as the streams benchmark
// does), then replays the journal through StreamJobEvents from sequence 0
// `rounds` times (default 9), each next to a bare keyset SELECT of the same
// rows as the streams benchmark does. Prints the medians and their ratio,
// the CPU time per replayed event of state and events (from /proc) and of
// this process (the client), and, once the services stop, each one's
// heaviest functions by self time. PROFILE=0 runs without --cpu-prof (the
// profiler slows what it watches). `root` runs the services of another
// built checkout (a commit to compare with).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { printCpuProfiles } from './cpu-profile-summary.mjs';
import { clientWith } from './docket/clients.mjs';
import { launchDocket } from './docket/instance.mjs';
import { startDurablePostgres } from './postgres.mjs';
import { cpuMsOf } from './process-cpu.mjs';
import { keysetSelectRate, replayRate, settleBacklog, writeBacklog } from './replay.mjs';
import { quantile } from './stats.mjs';

const backlog = Number(process.argv[2] ?? 5000);
const rounds = Number(process.argv[3] ?? 9);
const root = process.argv[4] ?? new URL('..', import.meta.url).pathname;
const profiling = process.env.PROFILE !== '0';
const profiles = mkdtempSync(join(tmpdir(), 'docket-profile-replay-'));

const postgres = await startDurablePostgres();
const databaseUrl = await postgres.createDatabase('profile_replay');
const launch = (nodeOptions) => launchDocket({ root, databaseUrl, names: ['state', 'admission', 'events'], nodeOptions });
const writer = await launch([]);
let jobId;
try {
  const admission = clientWith(AdmissionService, writer.urls.admission[0], await writer.token('bench'));
  const state = clientWith(StateService, writer.urls.state[0], await writer.token('docket-internal', 'service'));
  jobId = (await admission.submitJob({ idempotencyKey: `replay-${randomBytes(12).toString('hex')}`, queue: 'bench' })).job.id;
  await writeBacklog(state, { subject: 'bench' }, jobId, backlog);
} finally {
  await writer.stop();
}
const docket = await launch(profiling ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`] : []);
const reader = new pg.Client({ connectionString: databaseUrl });
try {
  const events = clientWith(EventService, docket.urls.events[0], await docket.token('bench'));
  const latest = BigInt(backlog + 1);
  await reader.connect();
  await settleBacklog(reader);
  // One replay first, so the processes' start-up is not what is measured.
  await replayRate(events, jobId, latest);
  const replays = [];
  const selects = [];
  const pids = { state: docket.pids.state[0], events: docket.pids.events[0] };
  const cpuMs = { state: 0, events: 0, client: 0 };
  for (let round = 0; round < rounds; round += 1) {
    const before = { state: cpuMsOf(pids.state), events: cpuMsOf(pids.events), client: process.cpuUsage() };
    replays.push(await replayRate(events, jobId, latest));
    const client = process.cpuUsage(before.client);
    cpuMs.state += cpuMsOf(pids.state) - before.state;
    cpuMs.events += cpuMsOf(pids.events) - before.events;
    cpuMs.client += (client.user + client.system) / 1000;
    selects.push(await keysetSelectRate(reader, jobId, latest));
  }
  const replay = quantile(replays, 0.5);
  const select = quantile(selects, 0.5);
  console.log(`replay ${Math.round(replay)} events/s, keyset SELECT ${Math.round(select)} rows/s: ${(replay / select).toFixed(2)}x (medians of ${rounds})`);
  for (const [name, ms] of Object.entries(cpuMs)) console.log(`${name}: ${((ms / (rounds * Number(latest))) * 1000).toFixed(1)} µs CPU per replayed event`);
} finally {
  await reader.end().catch(() => {});
  await docket.stop();
  await postgres.stop();
}
if (profiling) printCpuProfiles(profiles, { count: rounds * (backlog + 1), name: 'replayed event' });

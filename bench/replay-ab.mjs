// `node bench/replay-ab.mjs <rootA> <rootB> [rounds]`: backlog replay of two
// built checkouts compared in one run. Starts the durable PostgreSQL,
// state + admission + events from `rootA` (which writes a journal of
// BACKLOG events, default 5,000) and state + events from `rootB` on the
// same database, settles it (`vacuum analyze`, as the streams benchmark
// does), then replays the journal through each one's
// StreamJobEvents from sequence 0, alternating which goes first, `rounds`
// times (default 21), with a bare keyset SELECT of the same rows after
// each pair. Prints each side's median, its ratio to the SELECT, the CPU
// per replayed event of its state and events processes and of this
// process (the client), the machine's idle share during its replays, and
// B's median over A's with how many rounds B won.
//
// Runs minutes apart on this machine differ by up to 2x, far more than most
// changes; replays interleaved in one run share the machine's mood. Pass the
// same root twice for an A/A run (what noise alone gives). Environment
// variables starting with BENCH_AB_ reach B's services alone.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { clientWith } from './docket/clients.mjs';
import { launchDocket } from './docket/instance.mjs';
import { startDurablePostgres } from './postgres.mjs';
import { cpuMsOf } from './process-cpu.mjs';
import { keysetSelectRate, replayRate, settleBacklog, writeBacklog } from './replay.mjs';
import { quantile } from './stats.mjs';

const [rootA, rootB] = process.argv.slice(2, 4);
if (!rootA || !rootB) throw new Error('usage: node bench/replay-ab.mjs <rootA> <rootB> [rounds]');
const rounds = Number(process.argv[4] ?? 21);
const backlog = Number(process.env.BACKLOG ?? 5000);
const latest = BigInt(backlog + 1);

/** The machine's CPU time so far and the idle part of it, from /proc/stat (ticks). */
function machineTicks() {
  const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { total: ticks.reduce((a, b) => a + b, 0), idle: ticks[3] + ticks[4] };
}

const postgres = await startDurablePostgres();
const databaseUrl = await postgres.createDatabase('replay_ab');
const a = await launchDocket({ root: rootA, databaseUrl, names: ['state', 'admission', 'events'] });
let b;
const reader = new pg.Client({ connectionString: databaseUrl });
try {
  const admission = clientWith(AdmissionService, a.urls.admission[0], await a.token('bench'));
  const state = clientWith(StateService, a.urls.state[0], await a.token('docket-internal', 'service'));
  const jobId = (await admission.submitJob({ idempotencyKey: `replay-ab-${randomBytes(12).toString('hex')}`, queue: 'bench' })).job.id;
  await writeBacklog(state, { subject: 'bench' }, jobId, backlog);
  const onlyB = Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('BENCH_AB_')));
  b = await launchDocket({ root: rootB, databaseUrl, names: ['state', 'events'], env: onlyB });
  const sides = [];
  for (const [name, docket] of [['A', a], ['B', b]]) {
    const events = clientWith(EventService, docket.urls.events[0], await docket.token('bench'));
    sides.push({ name, docket, events, rates: [], idle: 0, total: 0, cpu: { state: 0, events: 0, client: 0 } });
  }
  await reader.connect();
  await settleBacklog(reader);
  // Warm-up replays, untimed: the first of each side would time its JIT.
  for (const side of sides) for (let warm = 0; warm < 2; warm += 1) await replayRate(side.events, jobId, latest);
  const selects = [];
  for (let round = 0; round < rounds; round += 1) {
    for (const side of round % 2 ? [...sides].reverse() : sides) {
      const pids = { state: side.docket.pids.state[0], events: side.docket.pids.events[0] };
      const before = { state: cpuMsOf(pids.state), events: cpuMsOf(pids.events), client: process.cpuUsage(), machine: machineTicks() };
      side.rates.push(await replayRate(side.events, jobId, latest));
      const client = process.cpuUsage(before.client);
      const machine = machineTicks();
      side.idle += machine.idle - before.machine.idle;
      side.total += machine.total - before.machine.total;
      side.cpu.state += cpuMsOf(pids.state) - before.state;
      side.cpu.events += cpuMsOf(pids.events) - before.events;
      side.cpu.client += (client.user + client.system) / 1000;
    }
    selects.push(await keysetSelectRate(reader, jobId, latest));
  }
  const select = quantile(selects, 0.5);
  const perEvent = (ms) => ((ms / (rounds * Number(latest))) * 1000).toFixed(1);
  for (const side of sides) {
    const median = quantile(side.rates, 0.5);
    console.log(
      `${side.name}: replay ${Math.round(median)} events/s, ${(median / select).toFixed(2)}x the keyset SELECT (${Math.round(select)} rows/s); ` +
        `CPU per event: state ${perEvent(side.cpu.state)} µs, events ${perEvent(side.cpu.events)} µs, client ${perEvent(side.cpu.client)} µs; machine idle ${((100 * side.idle) / side.total).toFixed(0)}%`,
    );
  }
  const [sideA, sideB] = sides;
  const won = sideB.rates.filter((rate, round) => rate > sideA.rates[round]).length;
  console.log(`B/A: ${(quantile(sideB.rates, 0.5) / quantile(sideA.rates, 0.5)).toFixed(3)} (medians); B faster in ${won} of ${rounds} rounds`);
} finally {
  await reader.end().catch(() => undefined);
  await b?.stop();
  await a.stop();
  await postgres.stop();
}

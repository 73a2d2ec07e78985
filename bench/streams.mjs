// StreamJobEvents under load, through real state, admission and events
// processes on an embedded PostgreSQL:
// - memory of one events process holding 1,000 idle subscribers (VmRSS and
//   open file descriptors from /proc, before, while and after), and whether
//   cancelling them all gives it back;
// - backlog replay: a 5,000-event journal streamed from sequence 0;
// - commit-to-subscriber latency: TransitionJob through state until the
//   page frame carrying that event arrives at a live subscriber.
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { quantile, runConcurrently, startSystem } from './support.mjs';

const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 1000);
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 5000);
const LATENCY_ROUNDS = Number(process.env.BENCH_LATENCY_ROUNDS ?? 200);
const SETTLE_MS = 3000;
const MIB = 1024 * 1024;

function clientWith(service, url, token) {
  return createClient(
    service,
    createGrpcTransport({
      baseUrl: url,
      interceptors: [(next) => (request) => (request.header.set('authorization', `Bearer ${token}`), next(request))],
    }),
  );
}

/** The pid of the process listening on `url`'s port, found through /proc (Linux). */
function pidListeningOn(url) {
  const port = Number(new URL(url).port).toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is ip:port in hex; state 0A is LISTEN; field 9 is the inode.
      if (fields[1]?.endsWith(`:${port}`) && fields[3] === '0A') inodes.add(fields[9]);
    }
  }
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
        if (inode && inodes.has(inode)) return Number(pid);
      }
    } catch {
      // Another user's or a vanished process.
    }
  }
  throw new Error(`no process listens on ${url}`);
}

/** VmRSS (bytes) and open file descriptors of a process. */
function footprint(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKiB = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]);
  return { rss: rssKiB * 1024, fds: readdirSync(`/proc/${pid}/fd`).length };
}

/** Reads a stream until `stop` says so or the stream ends; resolves with the time the stop frame arrived. */
async function readUntil(stream, stop) {
  for await (const frame of stream) {
    if (stop(frame)) return performance.now();
  }
  return undefined;
}

const lastSequenceOf = (frame) => (frame.frame.case === 'page' ? frame.frame.value.events.at(-1)?.sequence : undefined);

export async function benchStreams() {
  const system = await startSystem(['state', 'admission', 'events']);
  try {
    const user = await system.token('bench');
    const admission = clientWith(AdmissionService, system.urls.admission[0], user);
    const state = clientWith(StateService, system.urls.state[0], await system.token('docket-internal', 'service'));
    const eventsUrl = system.urls.events[0];
    const events = clientWith(EventService, eventsUrl, user);
    const eventsPid = pidListeningOn(eventsUrl);
    const caller = { subject: 'bench' };
    const submit = async () => (await admission.submitJob({ idempotencyKey: `streams-${randomBytes(12).toString('hex')}`, queue: 'bench' })).job.id;

    // 1,000 idle subscribers, one job each.
    const jobIds = [];
    await runConcurrently(SUBSCRIBERS, 32, async () => jobIds.push(await submit()));
    const subscribeAll = async (count) => {
      const abort = new AbortController();
      setMaxListeners(0, abort.signal);
      const firstPages = [];
      const streams = jobIds.slice(0, count).map((jobId) => {
        let firstPage;
        firstPages.push(new Promise((resolve) => (firstPage = resolve)));
        return readUntil(events.streamJobEvents({ jobId }, { signal: abort.signal }), (frame) => {
          if (frame.frame.case === 'page') firstPage();
          return false;
        }).catch(() => undefined);
      });
      await Promise.all(firstPages);
      return async () => {
        abort.abort();
        await Promise.all(streams);
      };
    };
    // Warm up the code paths and connections once, so the baseline is not a cold process.
    await (await subscribeAll(50))();
    await sleep(SETTLE_MS);
    const baseline = footprint(eventsPid);
    const cancelAll = await subscribeAll(SUBSCRIBERS);
    await sleep(SETTLE_MS);
    const holding = footprint(eventsPid);
    await cancelAll();
    await sleep(SETTLE_MS);
    const released = footprint(eventsPid);

    // Backlog replay: one journal of BACKLOG events after job.admitted.
    const backlogJob = await submit();
    for (let written = 0; written < BACKLOG; written += 64) {
      const batch = Math.min(64, BACKLOG - written);
      await state.transitionJob({
        caller,
        jobId: backlogJob,
        events: Array.from({ length: batch }, (_, n) => ({ type: 'worker.step', payload: { n: written + n, note: 'x'.repeat(100) } })),
      });
    }
    const latest = BigInt(BACKLOG + 1);
    const replays = [];
    for (let round = 0; round < 3; round += 1) {
      const abort = new AbortController();
      const started = performance.now();
      const arrived = await readUntil(events.streamJobEvents({ jobId: backlogJob }, { signal: abort.signal }), (frame) => lastSequenceOf(frame) === latest);
      abort.abort();
      replays.push(((BACKLOG + 1) / (arrived - started)) * 1000);
    }

    // Commit-to-subscriber latency on a live tail.
    const liveJob = await submit();
    const abort = new AbortController();
    const frames = events.streamJobEvents({ jobId: liveJob }, { signal: abort.signal })[Symbol.asyncIterator]();
    const nextPage = async () => {
      for (;;) {
        const { value, done } = await frames.next();
        if (done) throw new Error('the live tail ended');
        if (value.frame.case === 'page') return value;
      }
    };
    await nextPage();
    const latencies = [];
    for (let round = 0; round < LATENCY_ROUNDS; round += 1) {
      const started = performance.now();
      const written = await state.transitionJob({ caller, jobId: liveJob, events: [{ type: 'worker.step', payload: { round } }] });
      const page = await nextPage();
      if (lastSequenceOf(page) !== written.lastSequence) throw new Error('the live tail skipped an event');
      latencies.push(performance.now() - started);
    }
    abort.abort();

    const mib = (bytes) => (bytes / MIB).toFixed(1);
    return [
      {
        name: `events RSS MiB: baseline / ${SUBSCRIBERS} idle StreamJobEvents / after cancelling`,
        figure: `${mib(baseline.rss)} / ${mib(holding.rss)} / ${mib(released.rss)}`,
      },
      {
        name: 'events RSS per 1,000 idle subscribers (MiB)',
        figure: mib(((holding.rss - baseline.rss) / SUBSCRIBERS) * 1000),
      },
      {
        name: `events open fds: baseline / ${SUBSCRIBERS} idle / after cancelling`,
        figure: `${baseline.fds} / ${holding.fds} / ${released.fds}`,
      },
      {
        name: `StreamJobEvents backlog replay, ${BACKLOG + 1} events (median of 3)`,
        'events/s': Math.round(quantile(replays, 0.5)),
      },
      {
        name: `commit-to-subscriber latency, TransitionJob -> page frame (${LATENCY_ROUNDS} rounds)`,
        'median ms': quantile(latencies, 0.5).toFixed(2),
        'p99 ms': quantile(latencies, 0.99).toFixed(2),
      },
    ];
  } finally {
    await system.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.table(await benchStreams());

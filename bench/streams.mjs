// StreamJobEvents under load, through real state, admission and events
// processes on an embedded PostgreSQL:
// - memory of one events process holding 1,000 idle subscribers: VmRSS and
//   open file descriptors from /proc, and the V8 heap in use after a full
//   GC, before, while and after; the events process is started here with
//   `--expose-gc` and a SIGUSR2 handler that reports process.memoryUsage(),
//   because RSS alone cannot tell memory held from memory V8 keeps for reuse;
// - backlog replay: a 5,000-event journal streamed from sequence 0;
// - commit-to-subscriber latency: TransitionJob through state until the
//   page frame carrying that event arrives at a live subscriber.
// In-process, not in the default set: `npm run bench -- --only streams`.
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { readFileSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { mintToken } from '@docket/auth';
import { launchService, serviceEntryPath, serviceEnvironment } from '@docket/cli';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { REPO_ROOT, clientWith, quantile, runConcurrently, startSystem } from './support.mjs';

const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 1000);
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 5000);
const LATENCY_ROUNDS = Number(process.env.BENCH_LATENCY_ROUNDS ?? 200);
const SETTLE_MS = 3000;
const MIB = 1024 * 1024;

/** Preloaded into the events process: on SIGUSR2, collect garbage and print the heap as a log line. */
const HEAP_PROBE = `data:text/javascript,${encodeURIComponent(
  "process.on('SIGUSR2', () => { globalThis.gc(); globalThis.gc(); " +
    "process.stdout.write(JSON.stringify({ msg: 'bench heap', heap_used: process.memoryUsage().heapUsed }) + '\\n'); });",
)}`;

/**
 * Starts an events process against `stateUrl` with the heap probe. It
 * verifies user tokens with its own secret (returned), and reaches state
 * with the service credentials of the system under test.
 */
async function startProbedEvents(root, stateUrl, system) {
  const authSecret = randomBytes(32).toString('base64url');
  const settings = { ...system.settings, authSecret, cursorSecret: randomBytes(32).toString('base64url') };
  let reportHeap;
  const events = launchService({
    name: 'events',
    entry: serviceEntryPath(root, 'events'),
    env: {
      PATH: process.env.PATH ?? '',
      NODE_OPTIONS: `--expose-gc --import=${HEAP_PROBE}`,
      ...system.legacyEnv,
      DOCKET_AUTH_SECRET: authSecret,
      ...serviceEnvironment('events', settings, '127.0.0.1:0', stateUrl),
    },
    onLine: (line) => {
      if (line.includes('"bench heap"')) reportHeap?.(JSON.parse(line).heap_used);
    },
  });
  const url = await events.ready;
  const pid = events.child.pid;
  return {
    url,
    token: (subject) => mintToken({ secret: authSecret, subject, role: 'user', ttlSeconds: 86_400 }),
    /** VmRSS and open fds (bytes, count) and the heap in use after a full GC (bytes). */
    async footprint() {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const rss = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]) * 1024;
      const fds = readdirSync(`/proc/${pid}/fd`).length;
      const heapUsed = new Promise((resolve) => (reportHeap = resolve));
      events.child.kill('SIGUSR2');
      return { rss, fds, heap: await heapUsed };
    },
    stop: () => events.stop('SIGTERM', 10_000),
  };
}

/** Reads a stream until `stop` says so or the stream ends; resolves with the time the stop frame arrived. */
async function readUntil(stream, stop) {
  for await (const frame of stream) {
    if (stop(frame)) return performance.now();
  }
  return undefined;
}

const lastSequenceOf = (frame) => (frame.frame.case === 'page' ? frame.frame.value.events.at(-1)?.sequence : undefined);

export async function benchStreams(options = {}) {
  const system = await startSystem(['state', 'admission'], options);
  const probed = await startProbedEvents(options.root ?? REPO_ROOT, system.urls.state[0], system);
  try {
    const admission = clientWith(AdmissionService, system.urls.admission[0], await system.token('bench'));
    const state = clientWith(StateService, system.urls.state[0], await system.token('docket-internal', 'service'));
    const events = clientWith(EventService, probed.url, await probed.token('bench'));
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
    const baseline = await probed.footprint();
    const cancelAll = await subscribeAll(SUBSCRIBERS);
    await sleep(SETTLE_MS);
    const holding = await probed.footprint();
    await cancelAll();
    await sleep(SETTLE_MS);
    const released = await probed.footprint();

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
    const per1000 = (field) => mib(((holding[field] - baseline[field]) / SUBSCRIBERS) * 1000);
    return [
      {
        name: `events RSS MiB: baseline / ${SUBSCRIBERS} idle StreamJobEvents / all cancelled`,
        figure: [baseline, holding, released].map((at) => mib(at.rss)).join(' / '),
      },
      {
        name: `events heap in use after GC, MiB: baseline / ${SUBSCRIBERS} idle / all cancelled`,
        figure: [baseline, holding, released].map((at) => mib(at.heap)).join(' / '),
      },
      { name: 'events memory per 1,000 idle subscribers, MiB (RSS; heap after GC)', figure: `${per1000('rss')}; ${per1000('heap')}` },
      {
        name: `events open fds: baseline / ${SUBSCRIBERS} idle / all cancelled`,
        figure: [baseline, holding, released].map((at) => at.fds).join(' / '),
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
    await probed.stop();
    await system.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.table(await benchStreams());

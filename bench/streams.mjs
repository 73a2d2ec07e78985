// The event-stream scale benchmark (issue 15 item 7), through real state,
// admission and events processes on the run's PostgreSQL. One run measures:
// - memory of one events process (VmRSS and fds from /proc, the V8 heap in
//   use after a full GC through a SIGUSR2 probe preloaded into it with
//   `--expose-gc`, since RSS alone cannot tell memory held from memory V8
//   keeps for reuse), the state process's VmRSS, and the stream gauges the
//   events process serves on /metrics (`docket_stream_subscribers`, any
//   `docket_events_*`), with 0, 1,000 and 10,000 idle StreamJobEvents
//   subscribers (10 per job over 1,000 jobs), then 1,000 WatchJobs
//   subscribers on top, then while those 1,000 jobs change (PauseJob and
//   ResumeJob through admission, for a few seconds), then after they settle
//   and once every subscriber is cancelled;
// - mutation-to-subscriber latency at each of those levels: a PauseJob or
//   ResumeJob response until the page frame with its event reaches a live
//   subscriber of the orchestrator (and, from the second level on, until the
//   job_changed frame of its new revision reaches the orchestrator's own
//   WatchJobs), next to a bare
//   unary round trip to the events process (grpc.health.v1 Health/Check,
//   same client library) and a
//   bare LISTEN/NOTIFY round trip on the same PostgreSQL (node-postgres);
// - the PauseJob/ResumeJob call latency with no subscriber, with all of
//   them open, and with none again once they are cancelled (so a baseline
//   that drifted during the run would show), and the CPU each process
//   (events, state, admission, PostgreSQL, the subscriber processes, the
//   orchestrator) used per call meanwhile, from /proc;
// - backlog replay: a 5,000-event journal streamed from sequence 0, next
//   to a bare keyset SELECT of the same rows from job_events.
// The idle subscribers live in forked processes (bench/generators/subscribe.mjs),
// so the orchestrator's own streams do not distort the events process's
// figures, at the lowest CPU priority (nice 19, BENCH_SUBSCRIBER_NICE) and
// under SCHED_IDLE (BENCH_SUBSCRIBER_POLICY), as clients on machines of
// their own would not take the services' cores; the
// CPU they use per call is reported beside the PauseJob/ResumeJob figures.
// Sizes: BENCH_SUBSCRIBERS (10,000; 2,000 with --quick),
// BENCH_STREAM_JOBS (1,000), BENCH_WATCHERS (a tenth of the subscribers),
// BENCH_BACKLOG (5,000), BENCH_LATENCY_ROUNDS (200), BENCH_CHURN_MS (5,000),
// BENCH_STREAMS_PER_PROCESS (2,500), BENCH_LATENCY_BUDGET_MS (60,000: a
// latency figure stops taking rounds past it, with at least 10). Only with
// `--only streams`. BENCH_PROFILE_DIR=<dir> runs the events, state and
// admission processes with `--cpu-prof` into that directory (written when
// they stop), and prints each one's heaviest functions during the two
// PauseJob/ResumeJob phases.
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { mintToken } from '@docket/auth';
import { launchService, serviceEntryPath, serviceEnvironment } from '@docket/cli';
import { Health } from '@docket/proto/grpc/health/v1/health_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { printCpuProfiles } from './cpu-profile-summary.mjs';
import { forkGenerator } from './generator-host.mjs';
import { cpuByRole, cpuSnapshot } from './process-cpu.mjs';
import { keysetSelectRate, replayRate, settleBacklog, writeBacklog } from './replay.mjs';
import { REPO_ROOT, clientWith, quantile, runConcurrently, startSystem } from './support.mjs';

const SETTLE_MS = 3000;
/** A mutation's frame that has not reached the measured subscriber after this long is counted as lost. */
const FRAME_TIMEOUT_MS = 30_000;
const MIB = 1024 * 1024;
/** Timed replays (and keyset SELECTs beside them) after an untimed one. */
const REPLAY_ROUNDS = 11;
const GOALS = {
  idleRssMiB: 1024,
  churnRssMiB: 1536,
  latencyMedianOne: 3,
  latencyMedianAll: 5,
  latencyP99All: 20,
  mutationSlowdown: 1.5,
  replayShare: 0.5,
};

/** The sizes of a run, from the environment (see the header). */
function sizesFrom(env, quick) {
  const subscribers = Number(env.BENCH_SUBSCRIBERS ?? (quick ? 2000 : 10_000));
  const jobs = Math.min(Number(env.BENCH_STREAM_JOBS ?? 1000), subscribers);
  return {
    subscribers,
    jobs,
    perJob: Math.ceil(subscribers / jobs),
    watchers: Number(env.BENCH_WATCHERS ?? Math.round(subscribers / 10)),
    backlog: Number(env.BENCH_BACKLOG ?? 5000),
    rounds: 2 * Math.ceil(Number(env.BENCH_LATENCY_ROUNDS ?? 200) / 2),
    churnMs: Number(env.BENCH_CHURN_MS ?? 5000),
    perProcess: Number(env.BENCH_STREAMS_PER_PROCESS ?? 2500),
    subscriberNice: Number(env.BENCH_SUBSCRIBER_NICE ?? 19),
    subscriberPolicy: env.BENCH_SUBSCRIBER_POLICY ?? 'idle',
    budgetMs: Number(env.BENCH_LATENCY_BUDGET_MS ?? 60_000),
  };
}

/** Preloaded into the events process: on SIGUSR2, collect garbage and print the heap as a log line. */
const HEAP_PROBE = `data:text/javascript,${encodeURIComponent(
  "process.on('SIGUSR2', () => { globalThis.gc(); globalThis.gc(); " +
    "process.stdout.write(JSON.stringify({ msg: 'bench heap', heap_used: process.memoryUsage().heapUsed }) + '\\n'); });",
)}`;

const rssOf = (pid) => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;

/** The stream gauges a service serves on GET /metrics: `docket_stream_subscribers` and `docket_events_*`, by labels. */
async function streamGauges(url) {
  try {
    const text = await (await fetch(`${url}/metrics`)).text();
    const gauges = {};
    for (const line of text.split('\n')) {
      const match = /^(docket_stream_subscribers|docket_events_\w+)(?:\{([^}]*)\})?\s+(\S+)$/.exec(line);
      if (!match) continue;
      const labels = (match[2] ?? '').split(',').filter((label) => label && !label.startsWith('service='));
      gauges[`${match[1]}${labels.length ? `{${labels.join(',')}}` : ''}`] = Number(match[3]);
    }
    return gauges;
  } catch (error) {
    return { error: String(error.message ?? error) };
  }
}

/** How many upstream (state) streams the gauges say the events process holds; undefined if none says. */
const upstreamOf = (gauges) => Object.entries(gauges).find(([name]) => name.includes('upstream') && !name.includes('reopen'))?.[1];

/**
 * Starts an events process against `stateUrl` with the heap probe. It
 * verifies user tokens with its own secret (returned), and reaches state
 * with the service credentials of the system under test.
 */
async function startProbedEvents(root, stateUrl, system) {
  const authSecret = randomBytes(32).toString('base64url');
  const settings = { ...system.settings, authSecret, cursorSecret: randomBytes(32).toString('base64url') };
  let reportHeap;
  const complaints = [];
  const events = launchService({
    name: 'events',
    nodeOptions: PROFILING,
    entry: serviceEntryPath(root, 'events'),
    env: {
      PATH: process.env.PATH ?? '',
      NODE_OPTIONS: `--expose-gc --import=${HEAP_PROBE}`,
      ...system.legacyEnv,
      DOCKET_AUTH_SECRET: authSecret,
      ...serviceEnvironment('events', settings, '127.0.0.1:0', stateUrl),
    },
    onLine: (line, stream) => {
      if (line.includes('"bench heap"')) reportHeap?.(JSON.parse(line).heap_used);
      else if (/"level":(40|50|60|"warn"|"error"|"fatal")/.test(line) && complaints.length < 20) complaints.push(line.slice(0, 300));
      // Whatever is not a JSON log line (a fatal error, a stack) is kept, the last 30 lines, for when the process dies.
      if (stream === 'stderr' || !line.startsWith('{')) (tail.push(line.slice(0, 300)), tail.length > 30 && tail.shift());
    },
  });
  const tail = [];
  let exit;
  events.exited.then((how) => (exit = how));
  const url = await events.ready;
  const pid = events.child.pid;
  return {
    url,
    pid,
    complaints,
    token: (subject) => mintToken({ secret: authSecret, subject, role: 'user', ttlSeconds: 86_400 }),
    /** VmRSS and open fds (bytes, count), the heap in use after a full GC (bytes), and the stream gauges. */
    async footprint() {
      if (exit) throw new Error(`the events process exited (code ${exit.code}, signal ${exit.signal}); its last non-log lines: ${tail.join(' | ') || 'none'}`);
      const rss = rssOf(pid);
      const fds = readdirSync(`/proc/${pid}/fd`).length;
      const heapUsed = new Promise((resolve) => (reportHeap = resolve));
      events.child.kill('SIGUSR2');
      return { rss, fds, heap: await heapUsed, gauges: await streamGauges(url) };
    },
    stop: () => events.stop('SIGTERM', 10_000),
  };
}

/**
 * A measured subscriber of the orchestrator: timestamps each frame's
 * marks (`marksOf(frame)`: the numbers it carries, e.g. event sequences)
 * as it arrives. `open(signal)` opens the stream, resuming after whatever
 * it saw last; a stream that fails (the events process answering INTERNAL
 * under load, say) is counted and opened again, as a client would.
 */
function measuredStream(open, marksOf) {
  const abort = new AbortController();
  const arrivals = [];
  const broken = { count: 0, firstError: undefined };
  let read = 0;
  let wake;
  const done = (async () => {
    while (!abort.signal.aborted) {
      try {
        for await (const frame of open(abort.signal)) {
          const at = performance.now();
          for (const mark of marksOf(frame)) arrivals.push({ mark, at });
          wake?.();
        }
        if (abort.signal.aborted) break;
        throw new Error('the measured stream ended');
      } catch (error) {
        if (abort.signal.aborted) break;
        broken.count += 1;
        broken.firstError ??= String(error?.message ?? error);
        await sleep(200);
      }
    }
  })();
  return {
    broken,
    /** Resolves with the arrival time of the first mark >= `mark` (skipping earlier ones), or undefined after `timeoutMs`. */
    async next(mark, timeoutMs = FRAME_TIMEOUT_MS) {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        while (read < arrivals.length) {
          const arrival = arrivals[read++];
          if (arrival.mark >= mark) return arrival.at;
        }
        const left = deadline - performance.now();
        if (left <= 0) return undefined;
        await new Promise((resolve) => {
          wake = resolve;
          setTimeout(resolve, left).unref();
        });
      }
    },
    async close() {
      abort.abort();
      wake?.();
      await done;
    },
  };
}

/** A live StreamJobEvents tail of `jobId` after `afterSequence`; its marks are the sequences of the events it receives. */
function liveTail(events, jobId, afterSequence) {
  let last = afterSequence;
  return measuredStream(
    (signal) => events.streamJobEvents({ jobId, afterSequence: last }, { signal }),
    (frame) => {
      if (frame.frame.case !== 'page') return [];
      last = frame.frame.value.events.at(-1)?.sequence ?? last;
      return frame.frame.value.events.map((event) => event.sequence);
    },
  );
}

/** A live WatchJobs feed (every job of the caller), resumed with its last cursor; its marks are the revisions of `jobId`'s changes. */
function liveWatch(events, jobId) {
  let cursor = '';
  return measuredStream(
    (signal) => events.watchJobs({ cursor }, { signal }),
    (frame) => {
      cursor = frame.cursor || cursor;
      return frame.frame.case === 'jobChanged' && frame.frame.value.jobId === jobId ? [frame.frame.value.revision] : [];
    },
  );
}

/** Where the services write their CPU profiles, if they are profiled (see the header). */
const PROFILES = process.env.BENCH_PROFILE_DIR;
const PROFILING = PROFILES ? ['--cpu-prof', `--cpu-prof-dir=${PROFILES}`] : [];
/** Now, on the clock a `.cpuprofile`'s timestamps use. */
const hrtimeMicros = () => Number(process.hrtime.bigint() / 1000n);
const summary = (values) => ({ median: quantile(values, 0.5), p99: quantile(values, 0.99), samples: values.length });

export async function benchStreams(options = {}) {
  const sizes = sizesFrom(process.env, options.quick);
  const began = performance.now();
  const log = (message) => console.log(`  streams ${((performance.now() - began) / 1000).toFixed(0).padStart(4)} s  ${message}`);
  log(`sizes ${JSON.stringify(sizes)}`);
  const system = await startSystem(['state', 'admission'], { ...options, nodeOptions: PROFILING });
  const statePid = system.pids?.state?.[0];
  const probed = await startProbedEvents(options.root ?? REPO_ROOT, system.urls.state[0], system);
  const pools = [];
  const children = [];
  let tail;
  let watch;
  // What has been measured so far: a run that breaks (the events process dying, say) still reports it.
  const m = { sizes, stages: [], levels: [], opening: [], replays: [], selects: [], received: [] };
  try {
    const userToken = await probed.token('bench');
    const admission = clientWith(AdmissionService, system.urls.admission[0], await system.token('bench'));
    const state = clientWith(StateService, system.urls.state[0], await system.token('docket-internal', 'service'));
    const events = clientWith(EventService, probed.url, userToken);
    const health = clientWith(Health, probed.url, userToken);
    const caller = { subject: 'bench' };
    const key = (what) => `streams-${what}-${randomBytes(12).toString('hex')}`;
    const submit = async () => (await admission.submitJob({ idempotencyKey: key('submit'), queue: 'bench' })).job.id;
    const footprint = async (stage) => {
      await sleep(SETTLE_MS);
      const at = { stage, ...(await probed.footprint()), stateRss: statePid ? rssOf(statePid) : undefined };
      log(`${stage}: events RSS ${(at.rss / MIB).toFixed(1)} MiB, heap ${(at.heap / MIB).toFixed(1)} MiB; upstream ${upstreamOf(at.gauges)}`);
      return at;
    };
    const openSubscribers = async (configs) => {
      const started = performance.now();
      const opened = configs.map((config) => forkGenerator('subscribe.mjs', { url: probed.url, token: userToken, niceness: sizes.subscriberNice, policy: sizes.subscriberPolicy, ...config }));
      children.push(...opened);
      await Promise.all(opened.map((child) => child.ready));
      return performance.now() - started;
    };
    /** `jobIds` repeated `times` each, split into forked processes of at most `perProcess` streams. */
    const streamConfigs = (jobIds, times) => {
      const all = Array.from({ length: times }, () => jobIds).flat();
      const processes = Math.ceil(all.length / sizes.perProcess);
      return Array.from({ length: processes }, (_, index) => ({ jobIds: all.filter((_, n) => n % processes === index) }));
    };

    // Untimed: the jobs the subscribers follow, one for the measured tail, one journal for the backlog.
    const jobIds = [];
    await runConcurrently(sizes.jobs, 32, async () => jobIds.push(await submit()));
    const liveJob = await submit();
    const backlogJob = await submit();
    await writeBacklog(state, caller, backlogJob, sizes.backlog);
    log(`submitted ${sizes.jobs + 2} jobs, backlog journal of ${sizes.backlog + 1} events`);

    // Bare round trips, on the events port and on PostgreSQL.
    const listener = new pg.Client({ connectionString: system.databaseUrl });
    const notifier = new pg.Client({ connectionString: system.databaseUrl });
    pools.push(listener, notifier);
    await Promise.all([listener.connect(), notifier.connect()]);
    await listener.query('LISTEN bench_round_trip');
    let notified;
    listener.on('notification', () => notified?.(performance.now()));
    const bare = async () => {
      const healthRtt = [];
      const notifyRtt = [];
      for (let round = 0; round < sizes.rounds; round += 1) {
        let started = performance.now();
        await health.check({ service: '' });
        healthRtt.push(performance.now() - started);
        const arrived = new Promise((resolve) => (notified = resolve));
        started = performance.now();
        await notifier.query(`NOTIFY bench_round_trip, '${round}'`);
        notifyRtt.push((await arrived) - started);
      }
      return { health: summary(healthRtt), notify: summary(notifyRtt) };
    };
    /**
     * PauseJob/ResumeJob on the live job through admission, alternating:
     * call latencies, and with the tail the response-to-frame latencies. A
     * failed call (e.g. DEADLINE_EXCEEDED under load) is counted, the job's
     * status re-read, and the rounds go on; so is a frame that never comes.
     */
    let paused = false;
    const mutations = async (withTail, rounds = sizes.rounds) => {
      const calls = [];
      const toFrame = [];
      const toWatch = [];
      let failed = 0;
      let lost = 0;
      let early = 0; // frames that arrived before the response (counted as 0 ms)
      let firstError;
      const roundsBegan = performance.now();
      // Past the budget, stop (with at least 10 rounds) once the job is QUEUED again.
      const overBudget = (round) => !paused && round >= 10 && performance.now() - roundsBegan > sizes.budgetMs;
      for (let round = 0; round < rounds && !overBudget(round); round += 1) {
        const request = { idempotencyKey: key(paused ? 'resume' : 'pause'), jobId: liveJob };
        const started = performance.now();
        let response;
        try {
          response = await (paused ? admission.resumeJob(request) : admission.pauseJob(request));
        } catch (error) {
          failed += 1;
          firstError ??= String(error?.message ?? error);
          for (;;) {
            try {
              paused = (await admission.getJob({ jobId: liveJob })).job.status === JobStatus.PAUSED;
              break;
            } catch {
              await sleep(500);
            }
          }
          continue;
        }
        const answered = performance.now();
        paused = !paused;
        calls.push(answered - started);
        if (!withTail) continue;
        const arrived = await tail.next(response.job.latestSequence);
        if (arrived === undefined) lost += 1;
        else {
          if (arrived < answered) early += 1;
          toFrame.push(Math.max(0, arrived - answered));
        }
        if (!watch) continue;
        const changed = await watch.next(response.job.revision);
        if (changed === undefined) lost += 1;
        else toWatch.push(Math.max(0, changed - answered));
      }
      return { calls: summary(calls), toFrame: withTail ? summary(toFrame) : undefined, toWatch: withTail && watch ? summary(toWatch) : undefined, failed, lost, early, firstError };
    };
    /** Who the machine's processes are, for saying where a phase's CPU went. */
    const roleOf = (pid, command) => {
      if (pid === probed.pid) return 'events';
      if (pid === process.pid) return 'orchestrator';
      for (const [name, pids] of Object.entries(system.pids ?? {})) if (pids.includes(pid)) return name;
      if (command.includes('generators/subscribe.mjs')) return 'subscriber processes';
      if (/^(\S*\/)?postgres[: ]/.test(command)) return 'postgres';
      return undefined;
    };
    /** The calls of `mutations(false)` with the CPU ms per call each role used meanwhile. */
    const mutationsWithCpu = async () => {
      const before = cpuSnapshot();
      const from = hrtimeMicros();
      const measured = await mutations(false);
      const window = { from, to: hrtimeMicros() };
      const used = cpuByRole(before, cpuSnapshot(), roleOf);
      const calls = Math.max(1, measured.calls.samples + measured.failed);
      return { ...measured, window, cpuPerCall: Object.fromEntries(Object.entries(used).map(([role, total]) => [role, total / calls])) };
    };
    const measureLevel = async (label) => {
      const brokenCount = () => tail.broken.count + (watch?.broken.count ?? 0);
      const brokenBefore = brokenCount();
      const level = { label, bare: await bare(), ...(await mutations(true)) };
      level.tailBroken = brokenCount() - brokenBefore;
      if (level.tailBroken > 0) level.firstError ??= `measured stream: ${tail.broken.firstError ?? watch?.broken.firstError}`;
      const toWatch = level.toWatch ? `; to WatchJobs median ${ms(level.toWatch.median)} ms` : '';
      log(`${label}: ${level.toFrame.samples} rounds, response -> frame median ${ms(level.toFrame.median)} ms, p99 ${ms(level.toFrame.p99)} ms${toWatch}; health ${ms(level.bare.health.median)} ms${trouble(level)}`);
      return level;
    };

    // Warm up code paths and connections once (50 streams, then PauseJob/ResumeJob as many rounds as a measurement), so neither
    // level 0 nor the call latency with no subscriber times a cold process; and vacuum what the set-up wrote, so no autovacuum
    // of it runs during that measurement (by the loaded one, 40 s of opening later, it would have finished).
    await openSubscribers([{ jobIds: jobIds.slice(0, 50) }]);
    await Promise.all(children.splice(0).map((child) => child.stop()));
    await mutations(false);
    await settleBacklog(notifier);
    await bare();
    const quiet = (m.quiet = await mutationsWithCpu());
    log(`PauseJob/ResumeJob with no subscriber: median ${ms(quiet.calls.median)} ms${trouble(quiet)}`);

    const { stages, levels, opening } = m;
    stages.push(await footprint('0 subscribers'));
    // The measured subscriber tails the live job from its current head; one unmeasured pair makes sure it is live.
    const { latestSequence } = await events.readJobEvents({ jobId: liveJob, afterSequence: 0n, pageSize: 1 });
    tail = liveTail(events, liveJob, latestSequence);
    await mutations(true, 2);
    levels.push(await measureLevel('1 StreamJobEvents subscriber'));
    // From the next level on, a WatchJobs subscriber of the orchestrator's own is timed too (at the first level it would be a second subscriber).
    watch = liveWatch(events, liveJob);
    await mutations(true, 2);

    // 1 per job, then up to `perJob` per job, then the WatchJobs subscribers.
    const oneEach = sizes.jobs;
    const openMs = await openSubscribers(streamConfigs(jobIds, 1));
    opening.push({ streams: oneEach, ms: openMs });
    stages.push(await footprint(`${oneEach.toLocaleString('en-US')} idle StreamJobEvents (1 per job)`));
    levels.push(await measureLevel(`${oneEach.toLocaleString('en-US')} StreamJobEvents subscribers`));
    if (sizes.perJob > 1) {
      const more = streamConfigs(jobIds, sizes.perJob - 1);
      const count = more.reduce((sum, config) => sum + config.jobIds.length, 0);
      opening.push({ streams: count, ms: await openSubscribers(more) });
      stages.push(await footprint(`${(oneEach + count).toLocaleString('en-US')} idle StreamJobEvents (${sizes.perJob} per job over ${sizes.jobs.toLocaleString('en-US')} jobs)`));
      levels.push(await measureLevel(`${(oneEach + count).toLocaleString('en-US')} StreamJobEvents subscribers`));
    }
    const streamCount = sizes.jobs * sizes.perJob;
    const everyone = `${streamCount.toLocaleString('en-US')} StreamJobEvents + ${sizes.watchers.toLocaleString('en-US')} WatchJobs`;
    if (sizes.watchers > 0) {
      opening.push({ streams: sizes.watchers, watch: true, ms: await openSubscribers([{ watchers: sizes.watchers }]) });
      stages.push(await footprint(`${everyone} idle`));
      levels.push(await measureLevel(`${everyone} subscribers`));
    }
    const loaded = (m.loaded = await mutationsWithCpu());
    log(`PauseJob/ResumeJob with ${everyone} (${loaded.calls.samples} calls): median ${ms(loaded.calls.median)} ms${trouble(loaded)}`);

    // The 1,000 jobs change: each caller pauses then resumes the next job, for churnMs; the events process's RSS is sampled.
    let peakRss = 0;
    let changes = 0;
    let refused = 0;
    const sampler = setInterval(() => {
      try {
        peakRss = Math.max(peakRss, rssOf(probed.pid));
      } catch {
        // the process is gone; the next footprint says so
      }
    }, 200);
    const churnStarted = performance.now();
    let nextJob = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (performance.now() - churnStarted < sizes.churnMs) {
          const jobId = jobIds[nextJob++ % jobIds.length];
          try {
            await admission.pauseJob({ idempotencyKey: key('churn-pause'), jobId });
            await admission.resumeJob({ idempotencyKey: key('churn-resume'), jobId });
            changes += 2;
          } catch {
            refused += 1; // another caller holds this job (it came round again): skip it
          }
        }
      }),
    );
    const churnSeconds = (performance.now() - churnStarted) / 1000;
    clearInterval(sampler);
    m.churn = { peakRss, changes, refused, seconds: churnSeconds };
    await probed.footprint(); // throws, with the process's last words, if it died meanwhile
    peakRss = Math.max(peakRss, rssOf(probed.pid));
    m.churn.peakRss = peakRss;
    log(`churn: ${changes} changes in ${churnSeconds.toFixed(1)} s, peak events RSS ${(peakRss / MIB).toFixed(1)} MiB`);
    const afterChurn = await footprint(`${everyone}, after the jobs changed`);
    stages.push(afterChurn);
    const received = (m.received = await Promise.all(children.map((child) => child.start())));
    await Promise.all(children.splice(0).map((child) => child.stop()));
    await Promise.all([tail.close(), watch?.close()]);
    tail = undefined;
    watch = undefined;
    stages.push(await footprint('all cancelled'));
    const quietAgain = (m.quietAgain = await mutationsWithCpu());
    log(`PauseJob/ResumeJob with no subscriber again: median ${ms(quietAgain.calls.median)} ms${trouble(quietAgain)}`);

    // Backlog replay, with no subscriber: StreamJobEvents from 0 and a bare keyset SELECT, interleaved, REPLAY_ROUNDS times each.
    const latest = BigInt(sizes.backlog + 1);
    const reader = new pg.Client({ connectionString: system.databaseUrl });
    pools.push(reader);
    await reader.connect();
    const { replays, selects } = m;
    // One untimed replay first: nothing before it read a backlog, so the first would time the services' warm-up.
    await replayRate(events, backlogJob, latest);
    const replayCpu = {};
    for (let round = 0; round < REPLAY_ROUNDS; round += 1) {
      const before = cpuSnapshot();
      replays.push(await replayRate(events, backlogJob, latest));
      for (const [role, used] of Object.entries(cpuByRole(before, cpuSnapshot(), roleOf))) replayCpu[role] = (replayCpu[role] ?? 0) + used;
      selects.push(await keysetSelectRate(reader, backlogJob, latest));
    }
    // The CPU each process spent per replayed event, in µs: where a replay's time goes on a shared machine.
    m.replayCpu = Object.fromEntries(Object.entries(replayCpu).map(([role, used]) => [role, (used * 1000) / (REPLAY_ROUNDS * Number(latest))]));
    log(`replay ${Math.round(quantile(replays, 0.5))} events/s; keyset SELECT ${Math.round(quantile(selects, 0.5))} rows/s`);

  } catch (error) {
    m.error = error;
    console.log(`  streams: stopped early: ${String(error.message ?? error).slice(0, 600)}`);
  } finally {
    await Promise.all([tail?.close(), watch?.close()]);
    await Promise.all(children.map((child) => child.stop()));
    await Promise.all(pools.map((client) => client.end().catch(() => undefined)));
    await probed.stop();
    await system.stop();
  }
  for (const line of probed.complaints) log(`events process said: ${line}`);
  const labels = { [probed.pid]: 'events', ...Object.fromEntries(Object.entries(system.pids ?? {}).flatMap(([name, pids]) => pids.map((pid) => [pid, name]))) };
  for (const [name, phase] of Object.entries({ 'no subscriber': m.quiet, 'all subscribers open': m.loaded })) {
    if (!PROFILES || !phase) continue;
    console.log(`\n  the services during PauseJob/ResumeJob, ${name} (process.hrtime µs ${phase.window.from}-${phase.window.to}):`);
    printCpuProfiles(PROFILES, { count: Math.max(1, phase.calls.samples), name: 'call' }, undefined, phase.window, labels);
  }
  const rows = report({ ...m, complaints: probed.complaints, wallMs: performance.now() - began });
  if (m.error) throw Object.assign(new Error(`streams stopped early: ${m.error.message ?? m.error}`), { rows });
  return rows;
}

const mib = (bytes) => (bytes === undefined ? '?' : (bytes / MIB).toFixed(1));
const ms = (value) => (value === undefined ? '?' : value.toFixed(2));
/** Calls that failed and frames that never came, when there were any. */
const trouble = ({ failed, lost, tailBroken = 0, firstError }) =>
  failed || lost || tailBroken ? `; ${failed} calls failed, ${lost} frames lost, measured stream broke ${tailBroken}x${firstError ? ` (first: ${firstError.slice(0, 80)})` : ''}` : '';
/** The CPU each role used per call of a mutations phase, largest first. */
const cpuSpent = ({ cpuPerCall }) =>
  cpuPerCall
    ? `; CPU per call: ${Object.entries(cpuPerCall)
        .sort(([, a], [, b]) => b - a)
        .map(([role, each]) => `${role} ${ms(each)} ms`)
        .join(', ')}`
    : '';
const times = (ratio) => `${ratio.toFixed(2)}x`;
const met = (ok) => (ok ? 'yes' : 'no');

/** The rows of the streams table: measurement, figure, ratio, goal, met. */
function report({ sizes, stages, levels, opening, quiet, loaded, quietAgain, churn, received, replays, replayCpu, selects, complaints, wallMs, error }) {
  const rows = [{ measurement: 'sizes (BENCH_* variables)', figure: Object.entries(sizes).map(([name, value]) => `${name} ${value}`).join(', ') }];
  if (error) rows.push({ measurement: 'STOPPED EARLY: the rows below are what was measured before', figure: String(error.message ?? error).slice(0, 1500) });
  const memory = (at) =>
    `events RSS ${mib(at.rss)} MiB, heap ${mib(at.heap)} MiB, ${at.fds} fds; state RSS ${mib(at.stateRss)} MiB; upstream streams ${upstreamOf(at.gauges) ?? '?'}`;
  const allIdle = stages.find((at) => at.stage.endsWith(' idle'));
  for (const at of stages) {
    const goal = at === allIdle ? { goal: `events RSS <= ${GOALS.idleRssMiB} MiB`, met: met(at.rss / MIB <= GOALS.idleRssMiB) } : {};
    rows.push({ measurement: `memory, ${at.stage}`, figure: memory(at), ...goal });
  }
  if (churn) rows.push({
    measurement: `memory, peak while the ${sizes.jobs.toLocaleString('en-US')} jobs change (PauseJob+ResumeJob, 16 callers, ${churn.seconds.toFixed(1)} s, ${Math.round(churn.changes / churn.seconds)} changes/s)`,
    figure: `events RSS ${mib(churn.peakRss)} MiB (sampled every 200 ms)${churn.refused ? `; ${churn.refused} pause/resume pairs failed` : ''}`,
    goal: `<= ${GOALS.churnRssMiB} MiB`,
    met: met(churn.peakRss / MIB <= GOALS.churnRssMiB),
  });
  const zero = stages[0];
  const streamsIdle = stages.filter((at) => at.stage.includes('StreamJobEvents (')).at(-1);
  if (streamsIdle && zero) {
    const count = sizes.jobs * sizes.perJob;
    rows.push({
      measurement: 'memory per 1,000 idle StreamJobEvents subscribers',
      figure: `events RSS ${mib(((streamsIdle.rss - zero.rss) / count) * 1000)} MiB, heap ${mib(((streamsIdle.heap - zero.heap) / count) * 1000)} MiB`,
    });
  }
  for (const { streams, watch, ms: took } of opening) {
    rows.push({ measurement: `opening ${streams.toLocaleString('en-US')} ${watch ? 'WatchJobs' : 'StreamJobEvents'} subscribers (first frame of each)`, figure: `${(took / 1000).toFixed(1)} s, ${Math.round((streams / took) * 1000)}/s` });
  }
  const frames = received.reduce((sum, child) => sum + child.frames, 0);
  const failed = received.reduce((sum, child) => sum + child.failed + child.ended, 0);
  rows.push({
    measurement: 'frames the subscriber processes received (all levels)',
    figure: `${frames.toLocaleString('en-US')}; streams failed or ended early: ${failed}${received.find((child) => child.firstError) ? ` (${received.find((child) => child.firstError).firstError})` : ''}; scheduling policy: ${[...new Set(received.map((child) => child.scheduling))].join(', ')}`,
  });

  const reference = levels[0]?.bare;
  if (reference) {
  rows.push({ measurement: 'bare Health/Check round trip to the events process (no subscriber)', figure: `median ${ms(reference.health.median)} ms, p99 ${ms(reference.health.p99)} ms` });
  rows.push({ measurement: 'bare LISTEN/NOTIFY round trip, node-postgres (no subscriber)', figure: `median ${ms(reference.notify.median)} ms, p99 ${ms(reference.notify.p99)} ms` });
  levels.forEach((level, index) => {
    const last = index === levels.length - 1 && index > 0;
    const ratio = { median: level.toFrame.median / reference.health.median, p99: level.toFrame.p99 / reference.health.median };
    const goal = index === 0
      ? { goal: `median <= ${GOALS.latencyMedianOne}x`, met: met(ratio.median <= GOALS.latencyMedianOne) }
      : last
        ? { goal: `median <= ${GOALS.latencyMedianAll}x, p99 <= ${GOALS.latencyP99All}x`, met: met(ratio.median <= GOALS.latencyMedianAll && ratio.p99 <= GOALS.latencyP99All) }
        : {};
    rows.push({
      measurement: `mutation response -> subscriber frame, ${level.label} (${level.toFrame.samples} PauseJob/ResumeJob; ${level.early} frames before the response, as 0)`,
      figure: `median ${ms(level.toFrame.median)} ms, p99 ${ms(level.toFrame.p99)} ms (bare Health/Check now ${ms(level.bare.health.median)} ms, NOTIFY ${ms(level.bare.notify.median)} ms)${trouble(level)}`,
      ratio: `median ${times(ratio.median)}, p99 ${times(ratio.p99)} of the bare Health/Check median; ${times(level.toFrame.median / reference.notify.median)} of NOTIFY`,
      ...goal,
    });
    // The same mutations as seen by a WatchJobs subscriber of every job of the caller (its frame for the job's new revision).
    if (!level.toWatch) return;
    const watched = { median: level.toWatch.median / reference.health.median, p99: level.toWatch.p99 / reference.health.median };
    const watchGoal = last ? { goal: `median <= ${GOALS.latencyMedianAll}x, p99 <= ${GOALS.latencyP99All}x`, met: met(watched.median <= GOALS.latencyMedianAll && watched.p99 <= GOALS.latencyP99All) } : {};
    rows.push({
      measurement: `mutation response -> WatchJobs frame, ${level.label} (${level.toWatch.samples} PauseJob/ResumeJob)`,
      figure: `median ${ms(level.toWatch.median)} ms, p99 ${ms(level.toWatch.p99)} ms`,
      ratio: `median ${times(watched.median)}, p99 ${times(watched.p99)} of the bare Health/Check median`,
      ...watchGoal,
    });
  });
  }
  if (quiet) rows.push({ measurement: `PauseJob/ResumeJob through admission, no subscriber (${quiet.calls.samples} calls)`, figure: `median ${ms(quiet.calls.median)} ms, p99 ${ms(quiet.calls.p99)} ms${trouble(quiet)}${cpuSpent(quiet)}` });
  const slowdown = loaded && quiet ? loaded.calls.median / quiet.calls.median : undefined;
  if (loaded) rows.push({
    measurement: `PauseJob/ResumeJob through admission, ${levels.at(-1).label} (${loaded.calls.samples} calls)`,
    figure: `median ${ms(loaded.calls.median)} ms, p99 ${ms(loaded.calls.p99)} ms${trouble(loaded)}${cpuSpent(loaded)}`,
    ratio: `${times(slowdown)} of no subscriber`,
    goal: `<= ${GOALS.mutationSlowdown}x`,
    met: met(slowdown <= GOALS.mutationSlowdown),
  });

  // The same calls once every subscriber is gone: a baseline that moved meanwhile (the machine's mood, the tables' growth) shows here.
  if (quietAgain) rows.push({
    measurement: `PauseJob/ResumeJob through admission, no subscriber again, once all were cancelled (${quietAgain.calls.samples} calls)`,
    figure: `median ${ms(quietAgain.calls.median)} ms, p99 ${ms(quietAgain.calls.p99)} ms${trouble(quietAgain)}${cpuSpent(quietAgain)}`,
    ratio: loaded ? `all subscribers open: ${times(loaded.calls.median / quietAgain.calls.median)} of it` : undefined,
  });

  const replay = quantile(replays, 0.5);
  const select = quantile(selects, 0.5);
  const replayCpuText = replayCpu
    ? `; CPU per event: ${Object.entries(replayCpu)
        .sort(([, a], [, b]) => b - a)
        .map(([role, each]) => `${role} ${each.toFixed(1)} µs`)
        .join(', ')}`
    : '';
  if (replays.length > 0) rows.push({ measurement: `backlog replay, StreamJobEvents from 0, ${(sizes.backlog + 1).toLocaleString('en-US')} events (median of ${replays.length} after a warm-up replay)`, figure: `${Math.round(replay).toLocaleString('en-US')} events/s${replayCpuText}`, ratio: `${times(replay / select)} of the keyset SELECT`, goal: `>= ${GOALS.replayShare}x`, met: met(replay / select >= GOALS.replayShare) });
  if (selects.length > 0) rows.push({ measurement: `bare keyset SELECT of the same rows, pages of 256, node-postgres (median of ${selects.length})`, figure: `${Math.round(select).toLocaleString('en-US')} rows/s` });
  rows.push({ measurement: 'events process warnings/errors logged; benchmark wall time', figure: `${complaints.length}${complaints[0] ? ` (first: ${complaints[0].slice(0, 300)})` : ''}; ${(wallMs / 1000).toFixed(0)} s` });
  // Every row has every column, in this order, so the table's columns do not follow the first row's shape.
  return rows.map(({ measurement, figure, ratio, goal, met: ok }) => ({ measurement, figure, ratio: ratio ?? '', goal: goal ?? '', met: ok ?? '' }));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { extraTables } = await import('./report/files.mjs');
  const { renderText } = await import('./report/tables.mjs');
  console.log(renderText(extraTables({ streams: await benchStreams({ quick: process.argv.includes('--quick') }) })[0]));
  process.exit(0);
}

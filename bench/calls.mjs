// What one call costs a server in CPU, beside the floors: Health/Check
// (which does no work) on a bare node:http2 server writing the gRPC frame
// by hand, on a @grpc/grpc-js server, and on each Docket service; GetJob,
// ExplainJob and SubmitJob through admission, with the state service's
// share of the internal hop, and each call's median latency. The caller is a plain @grpc/grpc-js client in this process
// (what an outside caller uses), `IN_FLIGHT` calls at once; each server is
// its own process and its CPU is read from /proc before and after a run of
// calls. Targets are interleaved within each repetition; the rows are
// medians over repetitions. A process also spends CPU with no calls at all
// (execution's maintenance loops, events' heartbeats): measured over an idle
// window first, its share of each run is shown ("of it idle") and taken off
// in the last ratio. `npm run bench -- --only calls`.
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { create, toBinary, fromBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import {
  ExplainJobRequestSchema,
  ExplainJobResponseSchema,
  GetJobRequestSchema,
  GetJobResponseSchema,
  SubmitJobRequestSchema,
  SubmitJobResponseSchema,
  SubmitJobsRequestSchema,
  SubmitJobsResponseSchema,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { HealthCheckRequestSchema, HealthCheckResponseSchema } from '@docket/proto/grpc/health/v1/health_pb.js';
import { cpuMsOf } from './process-cpu.mjs';
import { median } from './stats.mjs';
import { REPO_ROOT, startSystem } from './support.mjs';

/** Calls in flight at once, as in the measurements. */
const IN_FLIGHT = 16;
/** How long each process is watched with no calls, for its idle CPU. */
const IDLE_WINDOW_MS = 3_000;
/** Items per SubmitJobs call. */
const BATCH_ITEMS = 100;

/** Starts a floor server (bench/floors/health-server.mjs) as a child process; resolves to its address and pid. */
async function startFloor(kind) {
  const child = fork(new URL('./floors/health-server.mjs', import.meta.url).pathname, [kind], { cwd: REPO_ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { port } = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${kind} floor exited with ${code}`)));
  });
  return { target: `127.0.0.1:${port}`, pid: child.pid, stop: () => child.disconnect() };
}

/** A grpc-js unary caller of `path` on `target`, with protobuf-es (de)serialisation and an optional bearer token. */
function unary(target, path, input, output, token) {
  const client = new grpc.Client(target, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (token) metadata.set('authorization', `Bearer ${token}`);
  const call = (message) =>
    new Promise((resolve, reject) => {
      client.makeUnaryRequest(path, (value) => Buffer.from(toBinary(input, value)), (bytes) => fromBinary(output, bytes), message, metadata, {}, (error, response) =>
        error ? reject(error) : resolve(response),
      );
    });
  return { call, close: () => client.close() };
}

/** Runs `count` calls of `next(index)`, `IN_FLIGHT` at once; resolves to the elapsed ms and the median call's latency. */
async function drive(count, next) {
  let issued = 0;
  const latencies = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (issued < count) {
        const callStarted = performance.now();
        await next(issued++);
        latencies.push(performance.now() - callStarted);
      }
    }),
  );
  return { elapsedMs: performance.now() - started, latencyMs: median(latencies) };
}

/** CPU ms of each of `pids` used while `work` runs, and `work`'s result. */
/**
 * Resolves once `pids` together spend at most one clock tick (10 ms) of CPU
 * in a quarter second, or after 10 s: a measurement starts from a quiet
 * system, not amid the work an earlier one left behind (the events service
 * following the feed of the jobs SubmitJob just admitted, the state service
 * serving it), which would be charged to the calls measured next.
 */
async function untilQuiet(pids) {
  for (let attempt = 0; attempt < QUIET_ATTEMPTS; attempt += 1) {
    const before = pids.map((pid) => cpuMsOf(pid) ?? 0);
    await new Promise((resolve) => setTimeout(resolve, QUIET_WINDOW_MS));
    const used = pids.reduce((sum, pid, index) => sum + (cpuMsOf(pid) ?? 0) - before[index], 0);
    if (used <= QUIET_CPU_MS) return;
  }
}
const QUIET_WINDOW_MS = 250;
const QUIET_CPU_MS = 10;
const QUIET_ATTEMPTS = 40;

async function measured(pids, work) {
  const before = pids.map((pid) => cpuMsOf(pid));
  const result = await work();
  return { ...result, cpuMs: pids.map((pid, index) => cpuMsOf(pid) - before[index]) };
}

export async function benchCalls(options = {}) {
  const calls = Number(process.env.BENCH_CALLS ?? (options.quick ? 2_000 : 10_000));
  const reps = Number(process.env.BENCH_CALL_REPS ?? 3);
  const floors = { bare: await startFloor('bare'), grpcJs: await startFloor('grpc-js') };
  const system = await startSystem(['state', 'admission', 'execution', 'events'], options);
  const clients = [];
  try {
    const token = await system.token('bench-calls');
    const docket = (name) => ({ target: new URL(system.urls[name][0]).host, pid: system.pids[name][0] });
    const health = (target) => {
      const client = unary(target, '/grpc.health.v1.Health/Check', HealthCheckRequestSchema, HealthCheckResponseSchema);
      clients.push(client);
      const request = create(HealthCheckRequestSchema, {});
      return () => client.call(request);
    };
    const admission = docket('admission');
    const state = docket('state');
    const getJob = unary(admission.target, '/docket.admission.v1.AdmissionService/GetJob', GetJobRequestSchema, GetJobResponseSchema, token);
    const explainJob = unary(admission.target, '/docket.admission.v1.AdmissionService/ExplainJob', ExplainJobRequestSchema, ExplainJobResponseSchema, token);
    const submitJob = unary(admission.target, '/docket.admission.v1.AdmissionService/SubmitJob', SubmitJobRequestSchema, SubmitJobResponseSchema, token);
    const submitJobs = unary(admission.target, '/docket.admission.v1.AdmissionService/SubmitJobs', SubmitJobsRequestSchema, SubmitJobsResponseSchema, token);
    clients.push(getJob, explainJob, submitJob, submitJobs);
    const run = randomBytes(4).toString('hex');
    const submitted = await submitJob.call(create(SubmitJobRequestSchema, { idempotencyKey: `calls-${run}-seed-job`, queue: `calls-${run}`, input: {} }));
    const jobId = submitted.job.id;
    // The job ExplainJob reads sits behind more claimable jobs than it counts (100): its worst case.
    let deepJobId = '';
    for (let call = 0; call < 11; call += 1) {
      const items = Array.from({ length: BATCH_ITEMS }, (_, index) =>
        create(SubmitJobRequestSchema, { idempotencyKey: `calls-${run}-deep-${call}-${index}`, queue: `calls-${run}-deep`, input: {} }),
      );
      const answer = await submitJobs.call(create(SubmitJobsRequestSchema, { items }));
      deepJobId = answer.results.at(-1).result.value.job.id;
    }
    let keys = 0;
    const submitRequest = () => create(SubmitJobRequestSchema, { idempotencyKey: `calls-${run}-${(keys += 1)}-submit`, queue: `calls-${run}`, input: { n: keys } });

    // Each target: its name, the processes whose CPU it costs, what one call is, and how many jobs a call carries.
    const targets = [
      { name: 'Health/Check, bare node:http2', pids: [floors.bare.pid], call: health(floors.bare.target) },
      { name: 'Health/Check, @grpc/grpc-js server', pids: [floors.grpcJs.pid], call: health(floors.grpcJs.target) },
      ...['admission', 'execution', 'events', 'state'].map((name) => ({ name: `Health/Check, Docket ${name}`, pids: [docket(name).pid], call: health(docket(name).target) })),
      { name: 'GetJob, Docket admission (+ state)', pids: [admission.pid, state.pid], call: () => getJob.call(create(GetJobRequestSchema, { jobId })) },
      // ExplainJob of a queued job with 1,099 claimable jobs ahead (more than it counts: 101): the reasons' statement on top of GetJob's read.
      { name: 'ExplainJob, 1,099 jobs ahead, Docket admission (+ state)', pids: [admission.pid, state.pid], call: () => explainJob.call(create(ExplainJobRequestSchema, { jobId: deepJobId })) },
      { name: 'SubmitJob, Docket admission (+ state)', pids: [admission.pid, state.pid], call: () => submitJob.call(submitRequest()) },
      {
        name: `SubmitJobs of ${BATCH_ITEMS}, Docket admission (+ state), per job`,
        pids: [admission.pid, state.pid],
        call: () => submitJobs.call(create(SubmitJobsRequestSchema, { items: Array.from({ length: BATCH_ITEMS }, submitRequest) })),
        jobsPerCall: BATCH_ITEMS,
      },
    ];
    // Warm-up: twice a measurement's calls to every target. A service just started reaches its steady cost
    // per call only after some 20,000 calls (V8's optimising tiers, the young generation grown to the
    // allocation rate): Health/Check on execution cost 96, 94 and 73 us in three runs of 10,000 after 2,000.
    for (const target of targets) await drive(2 * Math.max(20, Math.round(calls / (target.jobsPerCall ?? 1))), target.call);
    // What each process spends with no calls at all (maintenance loops, heartbeats, timers), per ms.
    const allPids = [...new Set(targets.flatMap((target) => target.pids))];
    const idleBefore = new Map(allPids.map((pid) => [pid, cpuMsOf(pid)]));
    await new Promise((resolve) => setTimeout(resolve, IDLE_WINDOW_MS));
    const idlePerMs = new Map(allPids.map((pid) => [pid, (cpuMsOf(pid) - idleBefore.get(pid)) / IDLE_WINDOW_MS]));
    const samples = new Map(targets.map((target) => [target.name, []]));
    for (let rep = 0; rep < reps; rep += 1) {
      for (const target of targets) {
        const count = Math.max(20, Math.round(calls / (target.jobsPerCall ?? 1)));
        await untilQuiet(allPids);
        const { elapsedMs, latencyMs, cpuMs } = await measured(target.pids, () => drive(count, target.call));
        const jobs = count * (target.jobsPerCall ?? 1);
        samples.get(target.name).push({
          perJobUs: cpuMs.map((ms) => (ms * 1000) / jobs),
          idlePerJobUs: target.pids.map((pid) => (idlePerMs.get(pid) * elapsedMs * 1000) / jobs),
          perSecond: (jobs * 1000) / elapsedMs,
          latencyMs,
        });
      }
    }
    const bareUs = median(samples.get(targets[0].name).map((sample) => sample.perJobUs[0]));
    return targets.map((target) => {
      const runs = samples.get(target.name);
      const serving = median(runs.map((sample) => sample.perJobUs[0]));
      const stateShare = target.pids.length > 1 ? median(runs.map((sample) => sample.perJobUs[1])) : undefined;
      const idle = median(runs.map((sample) => sample.idlePerJobUs[0]));
      return {
        call: target.name,
        'server CPU us': serving.toFixed(0),
        'of it idle us': idle.toFixed(0),
        'state CPU us': stateShare === undefined ? '' : stateShare.toFixed(0),
        'x bare http2': (serving / bareUs).toFixed(2),
        'x bare, net of idle': ((serving - idle) / bareUs).toFixed(2),
        [target.jobsPerCall ? 'jobs/s' : 'calls/s']: Math.round(median(runs.map((sample) => sample.perSecond))),
        'p50 call ms': median(runs.map((sample) => sample.latencyMs)).toFixed(2),
      };
    });
  } finally {
    for (const client of clients) client.close();
    await system.stop();
    floors.bare.stop();
    floors.grpcJs.stop();
  }
}

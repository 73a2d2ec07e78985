import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { Code, createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { status as GrpcStatus, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForServing } from '@docket/cli';
import { createWorker } from '@docket/worker-sdk';
import { AdmissionService, ScheduleOverlap, ScheduleSchema } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { DeletionState } from '@docket/proto/docket/common/v1/deletion_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { EventService, type StreamJobEventsResponse, type WatchJobsResponse } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { ExecutionService, type Assignment } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { Health, HealthCheckResponse_ServingStatus } from '@docket/proto/grpc/health/v1/health_pb.js';
import { GrpcJsChannel, seenByGrpcJs } from './support/clients.js';
import { startCluster, type DocketCluster, type ServiceName } from './support/cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startClusterWithSql, stopClustersWithSql } from './support/cluster-with-sql.js';
import { runDocket, startDocketDev } from './support/docket-cli.js';
import { JobWriter } from './support/job-writer.js';
import { newIdempotencyKey } from './support/keys.js';
import { until } from './support/polling.js';
import { freshQueue } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId } from './support/raw-worker.js';
import { jobCountOf, scheduledJobs } from './support/schedule-firings.js';
import { StreamReader } from './support/stream-probe.js';
import { checkPythonClient, generatePythonStubs, removePythonStubs } from './support/python-client-check.js';
import { isProcessAlive } from './support/process-alive.js';

/*
 * Issue 37: replicas as one. Three admission, three execution, two events
 * and two state processes behind the nginx front `docket dev --replicas`
 * runs (same layout, same configuration from deploy/nginx), every client
 * on the front's one address per service, the front services reaching
 * state through it too. What replicas must not change, through the front
 * and with the reference gRPC client (grpc-js): one job per idempotency
 * key whichever admission replica a retry reaches, one attempt per job
 * across execution replicas and their fences, streams that resume without
 * gap or duplicate on another events replica, the deletion runner and the
 * schedule firer (both in every execution replica). Which replica answered
 * each call is read from the front's access log.
 */

const COUNTS = { admission: 3, execution: 3, events: 2, state: 2 } as const;
const HEARTBEAT_MS = 200;

let cluster: DocketCluster;
let sql: pg.Client;
let userToken: string;
let workerToken: string;
let pythonStubs: string;
const channels: GrpcJsChannel[] = [];
/** Errors other than CANCELLED that a stream the test cancelled ended with. */
const streamFailures: ServiceError[] = [];

beforeAll(async () => {
  ({ cluster, sql } = await startClusterWithSql(startCluster, {
    databaseUrl: await createMigratedTestDatabase('replicas behind nginx'),
    replicas: COUNTS,
    front: 'nginx',
    env: {
      events: { DOCKET_HEARTBEAT_MS: String(HEARTBEAT_MS) },
      execution: { DOCKET_DELETION_INTERVAL_MS: '100', DOCKET_SCHEDULE_INTERVAL_MS: '250' },
    },
  }));
  pythonStubs = await generatePythonStubs();
  userToken = await cluster.tokenFor('front-user', 'user');
  workerToken = await cluster.tokenFor('front-worker', 'worker');
});

afterAll(async () => {
  await removePythonStubs(pythonStubs);
  expect(streamFailures).toEqual([]);
  for (const channel of channels) channel.close();
  await stopClustersWithSql();
});

/** A grpc-js channel (one HTTP/2 connection) to the front's address of `name`. */
function channelTo(name: ServiceName, token?: string): GrpcJsChannel {
  const channel = new GrpcJsChannel(cluster[name].url, token);
  channels.push(channel);
  return channel;
}

/** One line of the front's access log. */
interface FrontCall {
  readonly port: number;
  readonly path: string;
  readonly status: number;
  readonly grpcStatus: string;
  readonly upstream: string;
}

/** Every call the front has logged so far. */
async function frontCalls(): Promise<FrontCall[]> {
  const log = await readFile(cluster.front!.accessLog, 'utf8');
  return log.split('\n').flatMap((line) => {
    const match = /^\S+ (\d+) "POST (\S+) [^"]*" (\d+) grpc-status=(\S*) upstream=(\S+)/.exec(line);
    return match ? [{ port: Number(match[1]), path: match[2]!, status: Number(match[3]), grpcStatus: match[4]!, upstream: match[5]! }] : [];
  });
}

/**
 * The replicas (`host:port`) that answered calls to `path`, in the order
 * of the log, once it holds at least `count` (nginx logs a call as it
 * ends, a stream once it is over).
 */
async function upstreamsOf(path: string, count = 1): Promise<string[]> {
  const upstreams = async (): Promise<string[]> => (await frontCalls()).filter((call) => call.path === path).map((call) => call.upstream);
  await until(async () => (await upstreams()).length >= count, `${count} calls to ${path} in the front's access log`);
  return upstreams();
}

/** The `host:port` of each replica of `name`. */
function replicaAddresses(name: ServiceName): string[] {
  return cluster.replicas[name].map((replica) => new URL(replica.url).host);
}

/** Reads a grpc-js server stream frame by frame with time limits. */
function readerOf<T>(stream: { readonly frames: AsyncIterator<T> }): StreamReader<T> {
  return new StreamReader(stream.frames);
}

/** Ends a grpc-js stream from the client side; it must end CANCELLED (checked after all). */
function cancel(call: ClientReadableStream<unknown>): void {
  call.on('error', (error: ServiceError) => {
    if (error.code !== GrpcStatus.CANCELLED) streamFailures.push(error);
  });
  call.cancel();
}

describe('the nginx front before 3 admission, 3 execution, 2 events and 2 state replicas', () => {
  it('answers grpc.health.v1.Health/Check SERVING for every service, spreading the calls over every replica round-robin', async () => {
    for (const name of ['admission', 'execution', 'events', 'state'] as const) {
      // SERVING through the front, as a probe polls it.
      await waitForServing(cluster[name].url, { timeoutMs: 30_000 });
      const health = channelTo(name);
      for (let call = 0; call < COUNTS[name] * 2; call += 1) {
        // Each replica's own answer: SERVING, or NOT_SERVING for the moment its dependency probe times out on a loaded machine.
        const { status } = await health.unary(Health.method.check, { service: '' });
        expect([HealthCheckResponse_ServingStatus.SERVING, HealthCheckResponse_ServingStatus.NOT_SERVING]).toContain(status);
      }
      // nginx logs the port it took the call on: its HTTP/2 listener, behind the port switch.
      const port = Number(new URL(cluster.front!.http2Urls[name]!).port);
      const checks = async (): Promise<FrontCall[]> => (await frontCalls()).filter((call) => call.port === port && call.path === '/grpc.health.v1.Health/Check');
      await until(async () => (await checks()).length >= COUNTS[name] * 2, `the ${name} health checks in the access log`);
      expect((await checks()).every((call) => call.status === 200 && call.grpcStatus === '0')).toBe(true);
      // Every replica answered calls on the service's one port (state's also come from the front services).
      const upstreams = (await frontCalls()).filter((call) => call.port === port).map((call) => call.upstream);
      expect(new Set(upstreams), name).toEqual(new Set(replicaAddresses(name)));
    }
  });

  it('admits one job for one idempotency key, whichever admission replica each retry reaches, sequential or concurrent', async () => {
    const admission = channelTo('admission', userToken);
    const request = { idempotencyKey: newIdempotencyKey('front'), queue: freshQueue('front'), input: { to: 'ada' } };
    const first = await admission.unary(AdmissionService.method.submitJob, request);
    expect(first.replayed).toBe(false);
    const retries = [];
    for (let retry = 0; retry < 5; retry += 1) retries.push(await admission.unary(AdmissionService.method.submitJob, request));
    // Concurrent duplicates, each on a connection of its own.
    const concurrentKey = newIdempotencyKey('front-burst');
    const burst = await Promise.all(
      Array.from({ length: 9 }, () => new GrpcJsChannel(cluster.admission.url, userToken)).map(async (channel) => {
        try {
          return await channel.unary(AdmissionService.method.submitJob, { ...request, idempotencyKey: concurrentKey });
        } finally {
          channel.close();
        }
      }),
    );

    expect(retries.map((retry) => [retry.replayed, retry.job?.id])).toEqual(retries.map(() => [true, first.job?.id]));
    expect(new Set(burst.map((answer) => answer.job?.id)).size).toBe(1);
    expect(burst.filter((answer) => !answer.replayed)).toHaveLength(1);
    expect(await jobCountOf(sql, 'front-user')).toBe(2);
    const submits = await upstreamsOf('/docket.admission.v1.AdmissionService/SubmitJob', 15);
    expect(new Set(submits.slice(0, 6))).toEqual(new Set(replicaAddresses('admission')));
  });

  it("passes gRPC, gRPC-Web and Connect over HTTP/2 and over HTTP/1.1 on each service's one port", async () => {
    const { job } = await channelTo('admission', userToken).unary(AdmissionService.method.submitJob, { idempotencyKey: newIdempotencyKey('protocols'), queue: 'protocols', input: {} });
    const bearer = { authorization: `Bearer ${userToken}` };
    const url = cluster.admission.url;
    const transports = {
      'gRPC-Web over HTTP/2': createGrpcWebTransport({ baseUrl: url, httpVersion: '2' }),
      'Connect over HTTP/2': createConnectTransport({ baseUrl: url, httpVersion: '2' }),
      'gRPC-Web over HTTP/1.1': createGrpcWebTransport({ baseUrl: url, httpVersion: '1.1' }),
      'Connect over HTTP/1.1': createConnectTransport({ baseUrl: url, httpVersion: '1.1' }),
      'Connect JSON over HTTP/1.1': createConnectTransport({ baseUrl: url, httpVersion: '1.1', useBinaryFormat: false }),
    };
    for (const [what, transport] of Object.entries(transports)) {
      const answer = await createClient(AdmissionService, transport).getJob({ jobId: job!.id }, { headers: bearer });
      expect(answer.job?.id, what).toBe(job!.id);
    }
    // What a browser or curl sends: Connect's JSON by fetch (HTTP/1.1), with an error the same way.
    const response = await fetch(`${url}/docket.admission.v1.AdmissionService/GetJob`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer },
      body: JSON.stringify({ jobId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa' }),
    });
    expect(response.status).toBe(404);
    expect(((await response.json()) as { code: string }).code).toBe('not_found');
    // Every service's port, over HTTP/1.1: its health, as Connect JSON.
    for (const name of ['admission', 'execution', 'events', 'state'] as const) {
      const health = await fetch(`${cluster[name].url}/grpc.health.v1.Health/Check`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect([name, health.status, await health.json()]).toEqual([name, 200, { status: 'SERVING' }]);
    }
    // The calls reached nginx over the protocol they were sent in: the port switch passed each connection on whole.
    const protocols = async (): Promise<Set<string | undefined>> =>
      new Set(
        (await readFile(cluster.front!.accessLog, 'utf8'))
          .split('\n')
          .filter((line) => line.includes('/docket.admission.v1.AdmissionService/GetJob'))
          .map((line) => /"\S+ \S+ (HTTP\/[\d.]+)"/.exec(line)?.[1]),
      );
    await until(async () => (await protocols()).size === 2, 'GetJob logged over both protocols');
    expect(await protocols()).toEqual(new Set(['HTTP/1.1', 'HTTP/2.0']));
  });

  it('passes the Python grpcio client check through the front as it passes against one process of each service', async () => {
    // test/python-client.test.ts runs the same check, with the same expectations, against one of each.
    await checkPythonClient(cluster, pythonStubs, 'py-front');
  });

  it('hands each job to one attempt across the execution replicas, and refuses a wrong fence whichever replica it reaches', async () => {
    const queue = freshQueue('front-claims');
    const admission = channelTo('admission', userToken);
    const jobs = 40;
    for (let index = 0; index < jobs; index += 1) {
      await admission.unary(AdmissionService.method.submitJob, { idempotencyKey: newIdempotencyKey('claim'), queue, input: { index } });
    }
    const held = new Map<string, string>();
    const doubleClaims: string[] = [];
    let completed = 0;
    const runWorker = async (index: number): Promise<void> => {
      const execution = channelTo('execution', workerToken);
      const { workerIncarnation } = await execution.unary(ExecutionService.method.registerWorker, { workerName: `front-${queue}-${index}`, queues: [queue], maxConcurrency: 3 });
      while (completed < jobs) {
        const { assignments } = await execution.unary(ExecutionService.method.claimJobs, {
          workerIncarnation,
          maxJobs: 3,
          wait: durationFromMs(500),
          operationId: newOperationId(),
        });
        for (const assignment of assignments) {
          const jobId = assignment.envelope!.jobId;
          if (held.has(jobId)) doubleClaims.push(jobId);
          held.set(jobId, workerIncarnation);
        }
        for (const assignment of assignments) {
          await execution.unary(ExecutionService.method.reportOutcome, {
            attempt: attemptOf(assignment),
            operationId: newOperationId(),
            outcome: { case: 'success', value: { result: { by: index } } },
          });
          held.delete(assignment.envelope!.jobId);
          completed += 1;
        }
      }
    };
    await Promise.all(Array.from({ length: 4 }, (_, index) => runWorker(index)));
    expect(doubleClaims).toEqual([]);
    const { rows } = await sql.query<{ status: string; attempts: number }>(
      'select j.status, (select count(*)::int from attempts a where a.job_id = j.id) as attempts from jobs j where j.queue = $1',
      [queue],
    );
    expect(rows).toHaveLength(jobs);
    expect(rows.every((row) => row.status === 'SUCCEEDED' && row.attempts === 1)).toBe(true);
    const executionPort = Number(new URL(cluster.front!.http2Urls.execution!).port);
    const workerCalls = (await frontCalls()).filter((call) => call.port === executionPort);
    expect(new Set(workerCalls.map((call) => call.upstream))).toEqual(new Set(replicaAddresses('execution')));
    expect(new Set(await upstreamsOf('/docket.execution.v1.ExecutionService/ClaimJobs')).size).toBeGreaterThan(1);

    // A fence that is not the job's current one is refused on every replica; the current one is accepted once.
    await admission.unary(AdmissionService.method.submitJob, { idempotencyKey: newIdempotencyKey('fence'), queue, input: {} });
    const execution = channelTo('execution', workerToken);
    const { workerIncarnation } = await execution.unary(ExecutionService.method.registerWorker, { workerName: `fence-${queue}`, queues: [queue], maxConcurrency: 1 });
    let assignment: Assignment | undefined;
    await until(async () => {
      [assignment] = (await execution.unary(ExecutionService.method.claimJobs, { workerIncarnation, maxJobs: 1, wait: durationFromMs(500), operationId: newOperationId() })).assignments;
      return assignment !== undefined;
    }, 'the fence job to be claimed');
    const attempt = attemptOf(assignment!);
    for (let call = 0; call < COUNTS.execution; call += 1) {
      const refusal = await execution
        .unary(ExecutionService.method.renewAttempt, { attempt: { ...attempt, fence: BigInt(attempt.fence ?? 0n) + 1n }, operationId: newOperationId() })
        .then(() => undefined, seenByGrpcJs);
      expect(refusal).toMatchObject({ code: Code.FailedPrecondition, reason: 'STALE_AUTHORITY' });
    }
    await execution.unary(ExecutionService.method.renewAttempt, { attempt, operationId: newOperationId() });
    await execution.unary(ExecutionService.method.reportOutcome, { attempt, operationId: newOperationId(), outcome: { case: 'success', value: { result: {} } } });
    const late = await execution
      .unary(ExecutionService.method.reportOutcome, { attempt, operationId: newOperationId(), outcome: { case: 'success', value: { result: {} } } })
      .then(() => undefined, seenByGrpcJs);
    expect(late?.reason).toBe('STALE_AUTHORITY');
    const renewals = await upstreamsOf('/docket.execution.v1.ExecutionService/RenewAttempt', COUNTS.execution + 1);
    expect(new Set(renewals.slice(-COUNTS.execution - 1))).toEqual(new Set(replicaAddresses('execution')));
  });

  it('carries the worker SDK’s Work stream (bidirectional) through the front', async () => {
    const queue = freshQueue('front-work');
    const admission = channelTo('admission', userToken);
    const ids: string[] = [];
    for (let index = 0; index < 10; index += 1) {
      ids.push((await admission.unary(AdmissionService.method.submitJob, { idempotencyKey: newIdempotencyKey('work'), queue, input: { index } })).job!.id);
    }
    const worker = createWorker({
      url: cluster.execution.url,
      token: workerToken,
      name: `front-sdk-${queue}`,
      queues: [queue],
      concurrency: 2,
      claimWaitMs: 1_000,
      handler: (job) => ({ doubled: Number(job.input['index']) * 2 }),
    });
    await worker.start();
    try {
      await until(async () => {
        const { rows } = await sql.query<{ n: number }>("select count(*)::int as n from jobs where queue = $1 and status = 'SUCCEEDED'", [queue]);
        return rows[0]?.n === ids.length;
      }, 'the SDK worker to finish its jobs through the front');
    } finally {
      await worker.stop();
    }
    // nginx logs a call when it ends: the Work stream, once the worker has stopped.
    expect((await upstreamsOf('/docket.execution.v1.ExecutionService/Work')).length).toBeGreaterThan(0);
  });

  it('resumes StreamJobEvents on another events replica after the last sequence seen: no gap, no duplicate', async () => {
    const admission = channelTo('admission', userToken);
    const { job } = await admission.unary(AdmissionService.method.submitJob, { idempotencyKey: newIdempotencyKey('stream'), queue: 'front-stream', input: {} });
    const jobId = job!.id;
    // The test writes the journal through the front's state address, as the services do.
    const writer = new JobWriter(cluster.state.url, cluster.serviceToken, 'front-user');
    let written = 1n; // SubmitJob's job.created
    const write = async (count: number, label?: string): Promise<void> => {
      await writer.append(jobId, count, label);
      written += BigInt(count);
    };
    await write(20);

    const sequences: bigint[] = [];
    const take = async (reader: StreamReader<StreamJobEventsResponse>, until: bigint): Promise<void> => {
      while (sequences.at(-1) !== until) {
        const frame = await reader.next((candidate) => candidate.frame.case === 'page' || candidate.frame.case === 'end', 10_000);
        if (frame?.frame.case !== 'page') throw new Error(`the stream ended before sequence ${until}`);
        sequences.push(...frame.frame.value.events.map((event) => event.sequence));
      }
    };
    const first = channelTo('events', userToken).serverStream(EventService.method.streamJobEvents, { jobId });
    await take(readerOf(first), written);
    cancel(first.call);
    await write(5, 'while away');

    // Each resume is a new call on a new connection: the front sends it to the next events replica.
    for (const extra of [3, 4]) {
      const resumed = channelTo('events', userToken).serverStream(EventService.method.streamJobEvents, { jobId, afterSequence: sequences.at(-1)! });
      const reader = readerOf(resumed);
      await write(extra, 'live');
      await take(reader, written);
      cancel(resumed.call);
    }
    expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, index) => BigInt(index + 1)));
    expect(sequences.at(-1)).toBe(33n);
    const streams = await upstreamsOf('/docket.events.v1.EventService/StreamJobEvents', 3);
    expect(new Set(streams.slice(-3))).toEqual(new Set(replicaAddresses('events')));
  });

  it('resumes WatchJobs from a cursor on another events replica with every change after it, and keeps a quiet stream alive on heartbeats', async () => {
    const watcher = await cluster.tokenFor('front-watcher', 'user');
    const admission = channelTo('admission', watcher);
    const submit = async (label: string): Promise<string> =>
      (await admission.unary(AdmissionService.method.submitJob, { idempotencyKey: newIdempotencyKey(label), queue: 'front-watch', input: {} })).job!.id;
    const isChange = (frame: WatchJobsResponse): boolean => frame.frame.case === 'jobChanged' || frame.frame.case === 'resyncRequired';

    const first = channelTo('events', watcher).serverStream(EventService.method.watchJobs, {});
    const reader = readerOf(first);
    const heartbeat = await reader.next((frame) => frame.frame.case === 'heartbeat', 10_000);
    expect(heartbeat?.cursor).not.toBe('');
    const before = await submit('watch-1');
    const seen = await reader.next(isChange, 10_000);
    expect(seen?.frame.case === 'jobChanged' && seen.frame.value.jobId).toBe(before);
    cancel(first.call);

    const missed = [await submit('watch-2'), await submit('watch-3')];
    for (let resume = 0; resume < 2; resume += 1) {
      const again = channelTo('events', watcher).serverStream(EventService.method.watchJobs, { cursor: seen!.cursor });
      const changes = readerOf(again);
      const jobIds: string[] = [];
      while (jobIds.length < missed.length) {
        const frame = await changes.next(isChange, 10_000);
        if (frame?.frame.case !== 'jobChanged') throw new Error(`expected a change, got ${frame?.frame.case ?? 'the end of the stream'}`);
        jobIds.push(frame.frame.value.jobId);
      }
      expect(jobIds).toEqual(missed);
      // Quiet for several heartbeats: the front keeps passing them.
      for (let beat = 0; beat < 3; beat += 1) expect((await changes.next((frame) => frame.frame.case === 'heartbeat', 5_000))?.frame.case).toBe('heartbeat');
      cancel(again.call);
    }
    const watches = await upstreamsOf('/docket.events.v1.EventService/WatchJobs', 3);
    expect(new Set(watches.slice(-2))).toEqual(new Set(replicaAddresses('events')));
  });

  it("runs a hard deletion to COMPLETED with the execution replicas' deletion runners, through the front", async () => {
    const admission = channelTo('admission', userToken);
    const { job } = await admission.unary(AdmissionService.method.submitJob, { idempotencyKey: newIdempotencyKey('doomed'), queue: 'front-delete', input: { secret: 'x' } });
    await admission.unary(AdmissionService.method.cancelJob, { idempotencyKey: newIdempotencyKey('cancel'), jobId: job!.id });
    const key = newIdempotencyKey('hard');
    const { deletion } = await admission.unary(AdmissionService.method.hardDeleteJob, { idempotencyKey: key, jobId: job!.id });
    const replay = await admission.unary(AdmissionService.method.hardDeleteJob, { idempotencyKey: key, jobId: job!.id });
    expect(replay.deletion?.deletionId).toBe(deletion?.deletionId);
    await until(async () => {
      const answer = await admission.unary(AdmissionService.method.getDeletion, { deletionId: deletion!.deletionId });
      return answer.deletion?.state === DeletionState.COMPLETED;
    }, 'the deletion to complete');
    const { rows } = await sql.query<{ n: number }>('select count(*)::int as n from job_events where job_id = $1', [job!.id]);
    expect(rows[0]?.n).toBe(0);
    const { job: tombstone } = await admission.unary(AdmissionService.method.getJob, { jobId: job!.id });
    expect(tombstone).toMatchObject({ id: job!.id, status: JobStatus.CANCELLED, input: {} });
  });

  it('fires a 1 s schedule once per tick with a firer in each of the three execution replicas', async () => {
    const owner = 'front-schedules';
    const admission = channelTo('admission', await cluster.tokenFor(owner, 'user'));
    const { schedule } = await admission.unary(AdmissionService.method.createSchedule, {
      idempotencyKey: newIdempotencyKey('every-second'),
      schedule: create(ScheduleSchema, {
        trigger: { case: 'interval', value: durationFromMs(1_000) },
        jobTemplate: { queue: 'front-ticks', input: {} },
        overlap: ScheduleOverlap.ALLOW,
      }),
    });
    const scheduleId = schedule!.scheduleId;
    // Real time: the schedule fires on the wall clock; four ticks.
    await until(async () => (await scheduledJobs(sql, scheduleId)).length >= 4, 'four ticks to fire', 20_000, 250);
    await admission.unary(AdmissionService.method.pauseSchedule, { idempotencyKey: newIdempotencyKey('pause'), scheduleId });
    const fired = await scheduledJobs(sql, scheduleId);
    expect(new Set(fired.map((job) => job.nominalMs)).size).toBe(fired.length);
    expect(fired.every((job) => job.nominalMs % 1_000 === 0)).toBe(true);
    expect(await jobCountOf(sql, owner)).toBe(fired.length);
    const { schedule: after } = await admission.unary(AdmissionService.method.getSchedule, { scheduleId });
    expect(after?.firedCount).toBe(BigInt(fired.length));
  });
});

describe('docket dev --replicas', () => {
  const scratch: string[] = [];
  afterAll(async () => {
    await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('starts 3/3/2/2 replicas behind nginx on the services’ ports, answers through them, and stops nginx with the rest on Ctrl-C', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'docket-dev-replicas-'));
    scratch.push(dataDir);
    const dev = await startDocketDev(['--replicas', 'admission=3,execution=3,events=2,state=2'], dataDir, await createMigratedTestDatabase('docket dev replicas'));
    const { ports } = dev;
    try {
      expect(dev.err()).toBe('');
      expect(dev.out()).toContain('Docket is running');
      for (const [name, port] of Object.entries(ports)) expect(dev.out()).toMatch(new RegExp(`\\n  ${name} +http://127\\.0\\.0\\.1:${port} `));
      const token = dev.token('user');
      const nginxPid = Number(await readFile(join(dataDir, 'nginx', 'nginx.pid'), 'utf8'));
      const switchPid = Number(await readFile(join(dataDir, 'nginx', 'port-switch.pid'), 'utf8'));
      expect([nginxPid, switchPid]).toEqual([expect.any(Number), expect.any(Number)]);
      expect(Math.min(nginxPid, switchPid)).toBeGreaterThan(0);

      for (const port of Object.values(ports)) await waitForServing(`http://127.0.0.1:${port}`, { timeoutMs: 30_000 });
      // HTTP/1.1 on the same port, as curl sends it.
      const overHttp1 = await fetch(`http://127.0.0.1:${ports.admission}/grpc.health.v1.Health/Check`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(await overHttp1.json()).toEqual({ status: 'SERVING' });
      const admission = new GrpcJsChannel(`http://127.0.0.1:${ports.admission}`, token);
      try {
        const request = { idempotencyKey: newIdempotencyKey('dev-front'), queue: 'default', input: { hello: 'world' } };
        const first = await admission.unary(AdmissionService.method.submitJob, request);
        const again = await admission.unary(AdmissionService.method.submitJob, request);
        expect([first.replayed, again.replayed, again.job?.id]).toEqual([false, true, first.job?.id]);
      } finally {
        admission.close();
      }
      // nginx logs a call as it ends, which may be just after its answer reached the client.
      const submitsLogged = async (): Promise<string[]> =>
        (await readFile(join(dataDir, 'logs', 'nginx-access.log'), 'utf8')).split('\n').filter((line) => line.includes('/docket.admission.v1.AdmissionService/SubmitJob'));
      await until(async () => (await submitsLogged()).length >= 2, 'both SubmitJob calls in the access log');
      const submits = await submitsLogged();
      expect(submits).toHaveLength(2);
      expect(new Set(submits.map((line) => /upstream=(\S+)/.exec(line)?.[1])).size).toBe(2);
      for (const replica of ['admission-1', 'admission-3', 'execution-3', 'events-2', 'state-2']) {
        expect(await readFile(join(dataDir, 'logs', `${replica}.log`), 'utf8')).toContain('"msg":"listening"');
      }

      expect(await dev.interrupt()).toBe(0);
      expect(dev.out()).toMatch(/Stopped\.\n$/);
      expect(isProcessAlive(nginxPid)).toBe(false);
      expect(isProcessAlive(switchPid)).toBe(false);
    } finally {
      // Ctrl-C, so that it stops nginx and the replicas (a SIGKILL would leave them running).
      await dev.kill();
    }
  }, 150_000);

  it('refuses at once, naming the Debian package, when nginx or HAProxy is missing', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'docket-dev-no-nginx-'));
    scratch.push(dataDir);
    const { code, stdout, stderr } = await runDocket(['dev', '--replicas', 'state=2'], { DOCKET_DATA_DIR: dataDir, DOCKET_NGINX: join(dataDir, 'no-nginx-here') });
    expect(code).toBe(1);
    expect(stderr).toContain('sudo apt-get install nginx');
    expect(stdout).not.toContain('Postgres');
    const withoutSwitch = await runDocket(['dev', '--replicas', 'state=2'], { DOCKET_DATA_DIR: dataDir, DOCKET_HAPROXY: join(dataDir, 'no-haproxy-here') });
    expect([withoutSwitch.code, withoutSwitch.stdout]).toEqual([1, expect.not.stringContaining('Postgres')]);
    expect(withoutSwitch.stderr).toContain('sudo apt-get install haproxy');
  });
});

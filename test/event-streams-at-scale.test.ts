import { setMaxListeners } from 'node:events';
import { readFile } from 'node:fs/promises';
import * as http2 from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import type { Client } from '@connectrpc/connect';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { Event } from '@docket/proto/docket/common/v1/event_pb.js';
import {
  EventService,
  StreamJobEventsRequestSchema,
  StreamJobEventsResponseSchema,
  type StreamJobEventsResponse,
  WatchJobsRequestSchema,
  WatchJobsResponseSchema,
  type WatchJobsResponse,
} from '@docket/proto/docket/events/v1/event_service_pb.js';
import { createWorker, type Worker } from '@docket/worker-sdk';
import { clientFor } from './support/clients.js';
import { startCluster, stopAll, type DocketCluster, type ServiceProcess } from './support/cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { JobWriter, readWholeJournal, submitJobs } from './support/job-writer.js';
import { newIdempotencyKey } from './support/keys.js';
import { until } from './support/polling.js';
import { scrape, value } from './support/prometheus.js';
import { freshQueue } from './support/raw-worker-harness.js';
import { logLines } from './support/stream-probe.js';

/*
 * Event streams at scale (issue 15): thousands of subscribers on two
 * events replicas share one state stream per events process, every
 * subscriber still gets exactly its job's journal or its own feed, and a
 * stopped state process is noticed (no heartbeats while it is away) and
 * ridden out without a gap or a duplicate.
 */

const HEARTBEAT_MS = 500;
/** Streams per client session: well inside a front service's 1,000 concurrent streams per session. */
const STREAMS_PER_SESSION = 250;

let cluster: DocketCluster;
let databaseUrl: string;
/** Writes through state replica 1, which events replica 0 does not read through. */
let writer: JobWriter;
let alice: string;

beforeAll(async () => {
  databaseUrl = await createMigratedTestDatabase('event streams at scale');
  cluster = await startCluster({
    databaseUrl,
    replicas: { state: 2, events: 2 },
    env: { events: { DOCKET_HEARTBEAT_MS: String(HEARTBEAT_MS) } },
  });
  alice = await cluster.tokenFor('alice', 'user');
  writer = new JobWriter(replica('state', 1).url, cluster.serviceToken, 'alice');
});

afterAll(async () => {
  replica('state', 0).process.kill('SIGCONT');
  await stopAll();
});

function replica(name: 'state' | 'events', index: number): ServiceProcess {
  const service = cluster.replicas[name][index];
  if (!service) throw new Error(`no ${name} replica ${index}`);
  return service;
}

/** Clients of one events replica for `token`, one session each, for `streams` streams. */
function sessionsFor(index: number, token: string, streams: number): Client<typeof EventService>[] {
  return Array.from({ length: Math.ceil(streams / STREAMS_PER_SESSION) }, () => clientFor(EventService, replica('events', index).url, token));
}

/** How many WatchJob/WatchChanges streams each state replica serves now. */
async function stateStreams(): Promise<number[]> {
  return Promise.all(cluster.replicas.state.map(async (state) => value(await scrape(state.url), 'docket_state_change_watchers', {}) ?? -1));
}

/** Follows a job's stream to `end`, resuming after the last sequence if a server cuts it; checks contiguity on the way. */
async function followToEnd(events: Client<typeof EventService>, jobId: string): Promise<Event[]> {
  const received: Event[] = [];
  for (let attempt = 0; attempt < 20; attempt += 1) {
    try {
      for await (const frame of events.streamJobEvents({ jobId, afterSequence: received.at(-1)?.sequence ?? 0n })) {
        if (frame.frame.case === 'end') return received;
        if (frame.frame.case !== 'page') continue;
        for (const event of frame.frame.value.events) {
          if (event.sequence !== (received.at(-1)?.sequence ?? 0n) + 1n) throw new Error(`${jobId}: sequence ${event.sequence} after ${received.at(-1)?.sequence ?? 0n}`);
          received.push(event);
        }
      }
    } catch (error) {
      if (attempt === 19) throw error;
      // Real time: a retry back-off before resuming a stream a server cut.
      await sleep(200);
    }
  }
  throw new Error(`${jobId}: no end`);
}

/** The resident set of a process, from /proc, in bytes. */
async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/**
 * A server-streaming EventService call over a bare HTTP/2 stream, so the
 * test controls reading exactly: `pause()` stops taking data off the
 * stream (HTTP/2 flow control then stops the server), `resume()` goes on.
 * Frames are decoded as they are taken.
 */
function rawStream<T>(url: string, token: string, method: 'StreamJobEvents' | 'WatchJobs', body: Uint8Array, decode: (bytes: Uint8Array) => T) {
  const session = http2.connect(url);
  session.on('error', () => {});
  const stream = session.request({
    ':method': 'POST',
    ':path': `/docket.events.v1.EventService/${method}`,
    'content-type': 'application/grpc+proto',
    te: 'trailers',
    authorization: `Bearer ${token}`,
  });
  stream.on('error', () => {});
  const envelope = Buffer.alloc(5 + body.byteLength);
  envelope.writeUInt32BE(body.byteLength, 1);
  envelope.set(body, 5);
  stream.end(envelope);
  const frames: T[] = [];
  let buffered = Buffer.alloc(0);
  stream.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.byteLength >= 5 && buffered.byteLength >= 5 + buffered.readUInt32BE(1)) {
      const length = buffered.readUInt32BE(1);
      frames.push(decode(buffered.subarray(5, 5 + length)));
      buffered = buffered.subarray(5 + length);
    }
  });
  return {
    frames,
    pause: () => stream.pause(),
    resume: () => stream.resume(),
    close: () => session.destroy(),
  };
}

/** A raw StreamJobEvents call of `jobId` from the start (see {@link rawStream}). */
function rawJobStream(url: string, token: string, jobId: string) {
  const body = toBinary(StreamJobEventsRequestSchema, create(StreamJobEventsRequestSchema, { jobId }));
  return rawStream(url, token, 'StreamJobEvents', body, (bytes) => fromBinary(StreamJobEventsResponseSchema, bytes));
}

/** A user's changes in the feed's order (`job@revision`), read from the table itself. */
async function feedOf(subject: string): Promise<string[]> {
  const sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  try {
    const { rows } = await sql.query<{ job_id: string; revision: string }>('select job_id, revision from job_changes where owner = $1 order by transaction_id, entry_id', [subject]);
    return rows.map((row) => `${row.job_id}@${row.revision}`);
  } finally {
    await sql.end();
  }
}

/** The `job@revision` of each `job_changed` frame. */
function changesIn(frames: readonly WatchJobsResponse[]): string[] {
  return frames.flatMap((frame) => (frame.frame.case === 'jobChanged' ? [`${frame.frame.value.jobId}@${frame.frame.value.revision}`] : []));
}

describe('event streams at scale', () => {
  it('2,000 subscribers over 200 jobs on two events replicas, while workers run the jobs: each gets exactly its journal and end, and state serves O(1) streams', async () => {
    const JOBS = 200;
    const PER_JOB = 10;
    const queue = freshQueue('at-scale');
    const jobIds = await submitJobs(cluster.admission.url, alice, JOBS, queue);
    const clients = [sessionsFor(0, alice, (JOBS * PER_JOB) / 2), sessionsFor(1, alice, (JOBS * PER_JOB) / 2)];
    const subscribers = jobIds.flatMap((jobId, job) =>
      Array.from({ length: PER_JOB }, (_, copy) => {
        const index = job * PER_JOB + copy;
        const perReplica = clients[index % 2]!;
        return followToEnd(perReplica[Math.floor(index / 2) % perReplica.length]!, jobId);
      }),
    );
    // Every subscriber is open before the workers start.
    await until(
      async () => logLines(replica('events', 0)).concat(logLines(replica('events', 1))).filter((line) => line['msg'] === 'subscribers').length > 0 &&
        cluster.replicas.events.reduce((sum, events) => sum + Number(logLines(events).filter((line) => line['msg'] === 'subscribers').at(-1)?.['job_event_streams'] ?? 0), 0) === JOBS * PER_JOB,
      'every subscriber to be open',
      60_000,
    );

    const streamCounts: number[][] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        // A scrape can fail while the state pool is saturated (its docket_jobs query); only successful ones are samples.
        const counts = await stateStreams().catch(() => undefined);
        if (counts) streamCounts.push(counts);
        // Real time: the sampling interval of this background sampler.
        await sleep(250);
      }
    })();
    const worker: Worker = createWorker({
      url: cluster.execution.url,
      token: await cluster.tokenFor('at-scale-worker', 'worker', [queue]),
      name: 'at-scale-worker',
      queues: [queue],
      concurrency: 20,
      claimWaitMs: 2_000,
      handler: async (job) => {
        for (let step = 1; step <= 3; step += 1) await job.progress(step, 3, `step ${step}`);
        return { done: true };
      },
    });
    await worker.start();
    let outcomes: Event[][];
    try {
      outcomes = await Promise.all(subscribers);
    } finally {
      sampling = false;
      await sampler;
      await worker.stop();
    }

    for (const [job, jobId] of jobIds.entries()) {
      const journal = await readWholeJournal(replica('events', 1).url, alice, jobId);
      expect(journal.at(-1)?.type).toBe('job.succeeded');
      for (let copy = 0; copy < PER_JOB; copy += 1) {
        const received = outcomes[job * PER_JOB + copy]!;
        expect(received.map((event) => event.hash)).toEqual(journal.map((event) => event.hash));
      }
    }
    // Each state replica served at most its events process's stream and the execution service's, whatever the subscribers.
    expect(streamCounts.length).toBeGreaterThan(4);
    expect(Math.max(...streamCounts.flat())).toBeLessThanOrEqual(3);
  }, 240_000);

  it('SIGSTOP of the state process for 10 s: a tail stops heartbeating within a few seconds, then gets every event committed meanwhile, no gap, no duplicate', async () => {
    const [jobId] = await submitJobs(cluster.admission.url, alice, 1, freshQueue('stopped-state'));
    const arrivals: { at: number; frame: StreamJobEventsResponse }[] = [];
    const abort = new AbortController();
    // Events replica 0 reads through state replica 0; the writer writes through state replica 1.
    const reading = (async () => {
      for await (const frame of clientFor(EventService, replica('events', 0).url, alice).streamJobEvents({ jobId: jobId! }, { signal: abort.signal })) {
        arrivals.push({ at: performance.now(), frame });
      }
    })().catch(() => {});
    const sequences = () => arrivals.flatMap(({ frame }) => (frame.frame.case === 'page' ? frame.frame.value.events.map((event) => Number(event.sequence)) : []));
    await until(async () => sequences().length === 1 && arrivals.some(({ frame }) => frame.frame.case === 'heartbeat'), 'the tail to catch up and heartbeat');

    const state = replica('state', 0);
    state.process.kill('SIGSTOP');
    const stoppedAt = performance.now();
    try {
      for (let round = 0; round < 5; round += 1) {
        await writer.append(jobId!, 3);
        // Real time: the writes are spread over the stop, so events are committed all through it.
        await sleep(1_500);
      }
      // Real time: the state process stays stopped for 10 s on the wall clock, longer than the tail's silence detection.
      await sleep(Math.max(0, 10_000 - (performance.now() - stoppedAt)));
    } finally {
      state.process.kill('SIGCONT');
    }
    const resumedAt = performance.now();
    // No false liveness: from a few seconds into the stop (3 s of upstream silence, one heartbeat interval) until SIGCONT, nothing at all.
    const NOTICED_WITHIN_MS = 3_000 + HEARTBEAT_MS + 1_000;
    expect(arrivals.filter(({ at }) => at > stoppedAt + NOTICED_WITHIN_MS && at < resumedAt).map(({ frame }) => frame.frame.case)).toEqual([]);
    expect(logLines(replica('events', 0)).some((line) => String(line['msg']).includes('went silent'))).toBe(true);

    await until(async () => sequences().length === 16, 'every event committed during the stop', 30_000);
    expect(sequences()).toEqual(Array.from({ length: 16 }, (_, index) => index + 1));
    abort.abort();
    await reading;
  }, 90_000);

  it('a subscriber that stops reading while its job appends three times the memory bound costs the events process a bounded amount of memory, then gets everything in order', async () => {
    // Three times the bound (72 MiB of labels) is appended while the
    // subscriber reads nothing; the events process may hold one read being
    // sent and two more (at most 1,024 events, about 2.3 MB, each) and the
    // HTTP/2 windows for them, so its RSS must grow by far less than that.
    const MEMORY_BOUND = 24 * 1024 * 1024;
    const UNREAD = 3 * MEMORY_BOUND;
    const [jobId] = await submitJobs(cluster.admission.url, alice, 1, freshQueue('slow-reader'));
    const events = replica('events', 0);
    const reader = rawJobStream(events.url, alice, jobId!);
    const sequences = () => reader.frames.flatMap((frame) => (frame.frame.case === 'page' ? frame.frame.value.events.map((event) => Number(event.sequence)) : []));
    try {
      await until(async () => sequences().length === 1, 'the reader to catch up');
      reader.pause();
      const rssBefore = await rssOf(events.process.pid!);
      let rssMax = rssBefore;
      const label = 'x'.repeat(2_000);
      let appended = 1;
      while ((appended - 1) * label.length < UNREAD) {
        await writer.append(jobId!, 64, label);
        appended += 64;
        rssMax = Math.max(rssMax, await rssOf(events.process.pid!));
      }
      expect(rssMax - rssBefore).toBeLessThan(MEMORY_BOUND);
      console.info(`slow reader: ${appended} events (${Math.round((appended * label.length) / 2 ** 20)} MiB of labels) appended unread, events RSS +${((rssMax - rssBefore) / 2 ** 20).toFixed(1)} MiB at most`);
      reader.resume();
      await until(async () => sequences().length === appended, 'the reader to receive everything', 60_000);
      expect(sequences()).toEqual(Array.from({ length: appended }, (_, index) => index + 1));
    } finally {
      reader.close();
    }
  }, 150_000);

  it('WatchJobs under 1,000 subscribers of 50 users: no foreign job in any stream, and each stream is its user\'s part of the feed in commit order', async () => {
    const USERS = 50;
    const PER_USER = 20;
    const run = newIdempotencyKey('feed').slice(-8);
    const users = Array.from({ length: USERS }, (_, index) => `feed-${run}-${index}`);
    const tokens = await Promise.all(users.map((user) => cluster.tokenFor(user, 'user')));
    const streams = users.flatMap((_, user) =>
      [0, 1].map((events) => ({ user, client: clientFor(EventService, replica('events', events).url, tokens[user]!) })),
    ).flatMap(({ user, client }) => Array.from({ length: PER_USER / 2 }, () => ({ user, client, frames: [] as WatchJobsResponse[] })));
    const abort = new AbortController();
    // One signal ends all 1,000 streams: each holds a listener on it.
    setMaxListeners(0, abort.signal);
    const reading = streams.map(async (stream) => {
      for await (const frame of stream.client.watchJobs({}, { signal: abort.signal })) stream.frames.push(frame);
    });
    for (const done of reading) done.catch(() => {});
    await until(async () => streams.every((stream) => stream.frames.some((frame) => frame.frame.case === 'resyncRequired')), 'every stream to start', 60_000);

    // Every user submits jobs, and pauses and resumes one of them, concurrently.
    await Promise.all(
      users.map(async (_, user) => {
        const admission = clientFor(AdmissionService, cluster.admission.url, tokens[user]!);
        const queue = freshQueue(`feed-${user}`);
        const jobs: string[] = [];
        for (let job = 0; job < 3; job += 1) jobs.push((await admission.submitJob({ idempotencyKey: newIdempotencyKey('feed'), queue, input: {} })).job!.id);
        await admission.pauseJob({ idempotencyKey: newIdempotencyKey('pause'), jobId: jobs[0]! });
        await admission.resumeJob({ idempotencyKey: newIdempotencyKey('resume'), jobId: jobs[0]! });
      }),
    );

    const expected = new Map<number, string[]>();
    for (const [user, subject] of users.entries()) expected.set(user, await feedOf(subject));
    const changesOf = (stream: (typeof streams)[number]) => changesIn(stream.frames);
    await until(async () => streams.every((stream) => changesOf(stream).length >= expected.get(stream.user)!.length), 'every stream to receive its changes', 60_000);
    abort.abort();
    await Promise.allSettled(reading);
    for (const stream of streams) {
      expect(expected.get(stream.user)!.length).toBe(5); // three admissions, a pause, a resume
      expect(changesOf(stream)).toEqual(expected.get(stream.user));
    }
  }, 180_000);

  it('a WatchJobs subscriber that stops reading while 2,000 changes commit holds no one back, then gets every change in feed order', async () => {
    const subject = `feed-slow-${newIdempotencyKey('user').slice(-8)}`;
    const token = await cluster.tokenFor(subject, 'user');
    const events = replica('events', 0);
    const body = toBinary(WatchJobsRequestSchema, create(WatchJobsRequestSchema, {}));
    const slow = rawStream(events.url, token, 'WatchJobs', body, (bytes) => fromBinary(WatchJobsResponseSchema, bytes));
    const abort = new AbortController();
    const brisk: WatchJobsResponse[] = [];
    const reading = (async () => {
      for await (const frame of clientFor(EventService, events.url, token).watchJobs({}, { signal: abort.signal })) brisk.push(frame);
    })();
    reading.catch(() => {});
    try {
      await until(async () => slow.frames.length > 0 && brisk.length > 0, 'both streams to start');
      slow.pause();
      // Far more than the client's 64 KiB window and the server's buffer hold: the events process must stop writing and read on later.
      const CHANGES = 2_000;
      await Promise.all(Array.from({ length: 8 }, () => submitJobs(cluster.admission.url, token, CHANGES / 8, freshQueue('slow-watch'))));
      const feed = await feedOf(subject);
      expect(feed).toHaveLength(CHANGES);
      // The reading subscriber of the same user and process is not held back by the one that stopped.
      await until(async () => changesIn(brisk).length === CHANGES, 'the reading subscriber to receive every change', 60_000);
      expect(changesIn(slow.frames).length).toBeLessThan(CHANGES / 2);
      slow.resume();
      await until(async () => changesIn(slow.frames).length >= CHANGES, 'the stopped subscriber to receive every change', 60_000);
      expect(changesIn(slow.frames)).toEqual(feed);
      expect(changesIn(brisk)).toEqual(feed);
    } finally {
      abort.abort();
      slow.close();
    }
  }, 120_000);
});

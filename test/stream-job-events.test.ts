import { setTimeout as sleep } from 'node:timers/promises';
import type { JsonObject } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Event } from '@docket/proto/docket/common/v1/event_pb.js';
import { EventService, type StreamJobEventsResponse } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { clientFor, failureOf, seenByConnect, type Protocol } from './support/clients.js';
import { startCluster, stopAll, type DocketCluster, type ServiceProcess } from './support/cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { JobWriter, readWholeJournal, submitJobs } from './support/job-writer.js';
import { scrape, value } from './support/prometheus.js';
import { StreamReader, eventually, logLines } from './support/stream-probe.js';

const HEARTBEAT_MS = 200;
const MISSING_JOB_ID = 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa';

let cluster: DocketCluster;
let alice: string;
let bob: string;
/** Writes through state replica 1; events replica 0 reads through state replica 0. */
let writer: JobWriter;

beforeAll(async () => {
  cluster = await startCluster({
    databaseUrl: await createMigratedTestDatabase('stream job events'),
    replicas: { state: 2, events: 2 },
    env: { events: { DOCKET_HEARTBEAT_MS: String(HEARTBEAT_MS) }, state: { DOCKET_SHUTDOWN_GRACE_MS: '2000' } },
  });
  alice = await cluster.tokenFor('alice', 'user');
  bob = await cluster.tokenFor('bob', 'user');
  writer = new JobWriter(replica('state', 1).url, cluster.serviceToken, 'alice');
});

afterAll(stopAll);

function replica(name: 'state' | 'events', index: number): ServiceProcess {
  const service = cluster.replicas[name][index];
  if (!service) throw new Error(`no ${name} replica ${index}`);
  return service;
}

function eventsAt(index: number, token = alice, protocol: Protocol = 'grpc'): Client<typeof EventService> {
  return clientFor(EventService, replica('events', index).url, token, protocol);
}

/** Every frame of a stream that is expected to end by itself. */
async function collect(stream: AsyncIterable<StreamJobEventsResponse>): Promise<StreamJobEventsResponse[]> {
  const frames: StreamJobEventsResponse[] = [];
  for await (const frame of stream) frames.push(frame);
  return frames;
}

/** Reads a stream frame by frame with time limits. */
function readerOf(stream: AsyncIterable<StreamJobEventsResponse>): StreamReader<StreamJobEventsResponse> {
  return new StreamReader(stream[Symbol.asyncIterator]());
}

function notHeartbeat(frame: StreamJobEventsResponse): boolean {
  return frame.frame.case !== 'heartbeat';
}

/** The frames of a stream without heartbeats, as `page:<first>-<last>` / `end` / `progress`. */
function shapeOf(frames: readonly StreamJobEventsResponse[]): string[] {
  return frames
    .filter((frame) => frame.frame.case !== 'heartbeat')
    .map((frame) =>
      frame.frame.case === 'page'
        ? `page:${frame.frame.value.events[0]?.sequence}-${frame.frame.value.events.at(-1)?.sequence}`
        : String(frame.frame.case),
    );
}

/** A field of the events process' latest `subscribers` gauge log line (0 before the first). */
function gaugeOf(events: ServiceProcess, field: string): number {
  const latest = logLines(events)
    .filter((line) => line['msg'] === 'subscribers')
    .at(-1);
  return Number(latest?.[field] ?? 0);
}

describe('StreamJobEvents', () => {
  it('sends the backlog in pages of at most 256, then live events as they commit, then end after the terminal event', async () => {
    const [jobId] = await submitJobs(cluster.admission.url, alice, 1);
    for (let batch = 0; batch < 10; batch += 1) await writer.append(jobId!, 60);
    const frames: StreamJobEventsResponse[] = [];
    const sequences: bigint[] = [];
    for await (const frame of eventsAt(0).streamJobEvents({ jobId: jobId! })) {
      frames.push(frame);
      if (frame.frame.case !== 'page') continue;
      sequences.push(...frame.frame.value.events.map((event) => event.sequence));
      // Live: write only once the backlog has been delivered.
      if (sequences.at(-1) === 601n) await writer.append(jobId!, 3, 'live');
      if (sequences.at(-1) === 604n) await writer.cancel(jobId!);
    }
    expect(shapeOf(frames)).toEqual(['page:1-256', 'page:257-512', 'page:513-601', 'page:602-604', 'page:605-605', 'end']);
    expect(sequences).toEqual(Array.from({ length: 605 }, (_, index) => BigInt(index + 1)));
    const last = frames.at(-2);
    expect(last?.frame.case === 'page' && last.frame.value.events.at(-1)?.type).toBe('job.cancelled');
    expect(await readWholeJournal(replica('events', 0).url, alice, jobId!)).toEqual(
      frames.flatMap((frame) => (frame.frame.case === 'page' ? frame.frame.value.events : [])),
    );
  });

  it('streams the same journal on every protocol: binary gRPC pages as the state service encoded them, gRPC-Web and Connect (binary and JSON) decoded', async () => {
    const [jobId] = await submitJobs(cluster.admission.url, alice, 1);
    const state = clientFor(StateService, replica('state', 1).url, cluster.serviceToken);
    const payloads: JsonObject[] = [
      { text: 'é ünïcødé 🚀 "quoted" \\ back', n: -1.5, large: 2 ** 53, yes: true, nothing: null, list: [1, 'two', [3], { four: 4 }] },
      { nested: { deeper: { deepest: 'x'.repeat(300) } } },
      {},
    ];
    for (let batch = 0; batch < 5; batch += 1) {
      await state.transitionJob({
        caller: { subject: 'alice' },
        jobId: jobId!,
        events: Array.from({ length: 60 }, (_, index) => ({ type: 'worker.step', payload: { ...payloads[index % payloads.length], index } })),
      });
    }
    await writer.cancel(jobId!);
    const journal = await readWholeJournal(replica('events', 0).url, alice, jobId!);
    expect(journal).toHaveLength(302);
    const json = createClient(
      EventService,
      createConnectTransport({
        baseUrl: replica('events', 0).url,
        httpVersion: '2',
        useBinaryFormat: false,
        interceptors: [(next) => (request) => (request.header.set('authorization', `Bearer ${alice}`), next(request))],
      }),
    );
    const clients = { grpc: eventsAt(0, alice, 'grpc'), 'grpc-web': eventsAt(0, alice, 'grpc-web'), connect: eventsAt(0, alice, 'connect'), 'connect json': json };
    for (const [protocol, client] of Object.entries(clients)) {
      const frames = await collect(client.streamJobEvents({ jobId: jobId! }));
      expect(shapeOf(frames), protocol).toEqual(['page:1-256', 'page:257-302', 'end']);
      expect(frames.flatMap((frame) => (frame.frame.case === 'page' ? frame.frame.value.events : [])), protocol).toEqual(journal);
    }
  });

  it('gives a job that is already terminal its backlog after the cursor, then end, and resumes at any cursor', async () => {
    const [jobId] = await submitJobs(cluster.admission.url, alice, 1);
    await writer.append(jobId!, 2);
    await writer.cancel(jobId!);
    const events = eventsAt(0);
    expect(shapeOf(await collect(events.streamJobEvents({ jobId: jobId! })))).toEqual(['page:1-4', 'end']);
    expect(shapeOf(await collect(events.streamJobEvents({ jobId: jobId!, afterSequence: 2n })))).toEqual(['page:3-4', 'end']);
    expect(shapeOf(await collect(events.streamJobEvents({ jobId: jobId!, afterSequence: 4n })))).toEqual(['end']);
  });

  it('refuses a cursor above the latest sequence as OUT_OF_RANGE and bad requests as INVALID_FIELD', async () => {
    const [jobId] = await submitJobs(cluster.admission.url, alice, 1);
    const events = eventsAt(0);
    const beyond = await failureOf(collect(events.streamJobEvents({ jobId: jobId!, afterSequence: 2n })));
    expect(beyond).toMatchObject({ code: Code.OutOfRange, reason: 'CURSOR_BEYOND_LATEST' });
    expect(await failureOf(events.readJobEvents({ jobId: jobId!, afterSequence: 2n }))).toMatchObject({
      code: Code.OutOfRange,
      reason: 'CURSOR_BEYOND_LATEST',
    });
    const topOfRange = { jobId: jobId!, afterSequence: 2n ** 63n - 1n };
    expect(await failureOf(collect(events.streamJobEvents(topOfRange)))).toMatchObject({ code: Code.OutOfRange, reason: 'CURSOR_BEYOND_LATEST' });
    expect(await failureOf(events.readJobEvents({ ...topOfRange, pageSize: 256 }))).toMatchObject({ code: Code.OutOfRange, reason: 'CURSOR_BEYOND_LATEST' });
    const negative = await failureOf(collect(events.streamJobEvents({ jobId: jobId!, afterSequence: -1n })));
    expect(negative).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD', violations: [{ field: 'after_sequence' }] });
    const badId = await failureOf(events.readJobEvents({ jobId: 'not an id' }));
    expect(badId).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD', violations: [{ field: 'job_id' }] });
    const badSize = await failureOf(events.readJobEvents({ jobId: jobId!, pageSize: -1 }));
    expect(badSize).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD', violations: [{ field: 'page_size' }] });
  });

  it('coerces ReadJobEvents page sizes: 0 means 100, above 256 means 256', async () => {
    const [jobId] = await submitJobs(cluster.admission.url, alice, 1);
    for (let batch = 0; batch < 5; batch += 1) await writer.append(jobId!, 64);
    const events = eventsAt(0);
    const byDefault = await events.readJobEvents({ jobId: jobId! });
    expect(byDefault.events.map((event) => event.sequence)).toEqual(Array.from({ length: 100 }, (_, i) => BigInt(i + 1)));
    expect(byDefault.latestSequence).toBe(321n);
    expect((await events.readJobEvents({ jobId: jobId!, pageSize: 10_000 })).events).toHaveLength(256);
    expect((await events.readJobEvents({ jobId: jobId!, afterSequence: 300n, pageSize: 5 })).events.map((e) => e.sequence)).toEqual([
      301n, 302n, 303n, 304n, 305n,
    ]);
  });

  it("answers another user's job exactly like a missing one, on streams and reads, on every protocol", async () => {
    const [alicesJob] = await submitJobs(cluster.admission.url, alice, 1);
    for (const protocol of ['grpc', 'grpc-web', 'connect'] as Protocol[]) {
      const asBob = eventsAt(0, bob, protocol);
      const foreignStream = await failureOf(collect(asBob.streamJobEvents({ jobId: alicesJob! })));
      const missingStream = await failureOf(collect(asBob.streamJobEvents({ jobId: MISSING_JOB_ID })));
      expect(foreignStream).toEqual(missingStream);
      expect(foreignStream).toMatchObject({ code: Code.NotFound, reason: 'NOT_FOUND', domain: 'docket' });
      const foreignRead = await failureOf(asBob.readJobEvents({ jobId: alicesJob! }));
      expect(foreignRead).toEqual(await failureOf(asBob.readJobEvents({ jobId: MISSING_JOB_ID })));
      expect(foreignRead).toEqual(foreignStream);
    }
    const admin = await cluster.tokenFor('root', 'admin');
    expect((await eventsAt(0, admin).readJobEvents({ jobId: alicesJob! })).events).toHaveLength(1);
  });

  it('sends a heartbeat after each configured interval of silence', async () => {
    const [jobId] = await submitJobs(cluster.admission.url, alice, 1);
    const abort = new AbortController();
    const arrivals: number[] = [];
    const frames = eventsAt(0).streamJobEvents({ jobId: jobId! }, { signal: abort.signal });
    try {
      for await (const frame of frames) {
        if (frame.frame.case === 'heartbeat') arrivals.push(performance.now());
        if (arrivals.length === 6) break;
      }
    } finally {
      abort.abort();
    }
    // Six heartbeats arrived (the stream did not end or fail first), so five gaps are checked.
    expect(arrivals).toHaveLength(6);
    const gaps = arrivals.slice(1).map((at, index) => at - arrivals[index]!);
    expect(gaps).toHaveLength(5);
    // Every interval of silence gets its heartbeat: no gap much longer than the interval.
    for (const gap of gaps) expect(gap).toBeLessThan(HEARTBEAT_MS * 2.5);
    // And no more than one per interval. Judged over the five gaps, not each: one heartbeat that
    // reaches a loaded client late makes its gap longer and the next one shorter by as much.
    expect((arrivals[5]! - arrivals[0]!) / 5).toBeGreaterThan(HEARTBEAT_MS * 0.75);
    for (const gap of gaps) expect(gap).toBeGreaterThan(HEARTBEAT_MS * 0.25);
  });

  it('shows a subscriber on events replica A each event committed through state replica B, live', async () => {
    // Nothing polls: only the NOTIFY that state replica B's commit sends,
    // heard by state replica A's listener, can bring each event to the
    // subscriber. The bound is for correctness under load; the latency is
    // measured by `npm run bench -- --only wakeups`.
    const [jobId] = await submitJobs(cluster.admission.url, alice, 1);
    const abort = new AbortController();
    const frames = readerOf(eventsAt(0).streamJobEvents({ jobId: jobId! }, { signal: abort.signal }));
    try {
      expect(shapeOf([(await frames.next(notHeartbeat))!])).toEqual(['page:1-1']);
      for (let round = 0; round < 20; round += 1) {
        const written = await writer.append(jobId!, 1);
        const frame = await frames.next(notHeartbeat, 10_000);
        expect(frame?.frame.case === 'page' && frame.frame.value.events.map((e) => e.sequence)).toEqual([written.lastSequence]);
      }
    } finally {
      abort.abort();
    }
  });

  it('holds one state stream for any number of subscribers, and releases every subscriber, listener and timer when clients cancel', async () => {
    const events = replica('events', 1);
    const state = replica('state', 1);
    const watchJobCalls = (): number => logLines(state).filter((line) => line['msg'] === 'rpc' && line['rpc'] === '/docket.state.v1.StateService/WatchJob').length;
    const gaugeLines = (): Record<string, unknown>[] => logLines(events).filter((line) => line['msg'] === 'subscribers');
    const watchersOnState = async (): Promise<number> => value(await scrape(state.url), 'docket_state_change_watchers', {}) ?? -1;
    const stateWatchersBefore = await watchersOnState();
    const jobIds = await submitJobs(cluster.admission.url, alice, 5);
    const STREAMS = 20;
    const aborts = Array.from({ length: STREAMS }, () => new AbortController());
    const streams = aborts.map((abort, index) =>
      readerOf(eventsAt(1).streamJobEvents({ jobId: jobIds[index % jobIds.length]! }, { signal: abort.signal })),
    );
    for (const frames of streams) expect((await frames.next(notHeartbeat))?.frame.case).toBe('page');
    // The gauge logs shortly after a change: let the subscribers go idle
    // (each has sent a heartbeat and waits on its timer for the next), then open one more to sample them.
    await Promise.all(streams.map((frames) => frames.next((frame) => frame.frame.case === 'heartbeat')));
    aborts.push(new AbortController());
    streams.push(readerOf(eventsAt(1).streamJobEvents({ jobId: jobIds[0]! }, { signal: aborts.at(-1)!.signal })));
    expect((await streams.at(-1)!.next(notHeartbeat))?.frame.case).toBe('page');
    const open = await eventually(
      () => gaugeLines().find((line) => line['job_event_streams'] === STREAMS + 1),
      'the gauge to show every subscriber',
    );
    // One upstream for all of them, and the state service serves no stream per subscriber.
    expect(open['upstream_streams']).toBe(1);
    expect(await watchersOnState()).toBe(stateWatchersBefore);
    expect(watchJobCalls()).toBe(0);
    expect(open['active_timers']).toBeGreaterThanOrEqual(STREAMS);
    const linesBefore = gaugeLines().length;
    for (const abort of aborts) abort.abort();
    await Promise.allSettled(streams.map((frames) => frames.next(notHeartbeat)));
    const closed = await eventually(
      () => gaugeLines().slice(linesBefore).find((line) => line['job_event_streams'] === 0),
      'the gauge to show no subscriber',
    );
    expect(closed['upstream_streams']).toBe(1);
    expect(closed['active_timers']).toBeLessThanOrEqual(Number(open['active_timers']) - STREAMS);
    expect(await watchersOnState()).toBe(stateWatchersBefore);
  });

  it('delivers every event exactly once and in order to 200 subscribers that cancel, lose their events server and ride out a state restart', async () => {
    const JOBS = 200;
    const jobIds: string[] = [];
    for (let chunk = 0; chunk < JOBS / 20; chunk += 1) jobIds.push(...(await submitJobs(cluster.admission.url, alice, 20)));
    const events = eventsAt(0);
    const subscribers = jobIds.map((jobId) => follow(events, jobId));

    // The disruptions, one after another, while every subscriber is live.
    let eventsDuringStateRestart: ServiceProcess | undefined;
    let disrupting = true;
    const chaos = (async () => {
      // The first restart cuts streams that serve the subscribers, not ones still opening.
      await eventually(
        () => (gaugeOf(replica('events', 0), 'job_event_streams') >= JOBS * 0.9 ? true : undefined),
        'the subscribers to attach to the events process',
        30_000,
      );
      await replica('events', 0).restart();
      eventsDuringStateRestart = replica('events', 0);
      // Let the subscribers settle on the new events process, so the
      // state restart cuts an upstream that serves them rather than
      // subscribers still arriving.
      await eventually(
        () => (gaugeOf(eventsDuringStateRestart!, 'job_event_streams') >= JOBS * 0.9 && gaugeOf(eventsDuringStateRestart!, 'upstream_streams') === 1 ? true : undefined),
        'the subscribers to attach to the new events process',
        30_000,
      );
      await replica('state', 0).restart();
      // The events process reopens its one upstream to the new state process.
      await eventually(
        () => (gaugeOf(eventsDuringStateRestart!, 'upstream_reopened_total') >= 1 && gaugeOf(eventsDuringStateRestart!, 'upstream_streams') === 1 ? true : undefined),
        'the upstream to reopen to the restarted state service',
        30_000,
      );
      await replica('events', 0).kill();
      await replica('events', 0).restart();
      // Writes go on until the subscribers the crash cut off have resumed on the restarted process.
      await eventually(
        () => (gaugeOf(replica('events', 0), 'job_event_streams') >= JOBS * 0.9 ? true : undefined),
        'the subscribers to resume on the restarted events process',
        30_000,
      );
    })().finally(() => (disrupting = false));

    // Interleaved writers through state replica 1, 16 at a time, one write
    // per job at a time: transactions of 1..5 events for random jobs for as
    // long as the disruptions last (at least 3 per job), then each job's
    // terminal transition.
    const appended = new Map(jobIds.map((jobId) => [jobId, 0]));
    const busy = new Set<string>();
    const writing = Promise.all(
      Array.from({ length: 16 }, async () => {
        for (;;) {
          const candidates = [...appended.entries()].filter(([jobId, count]) => !busy.has(jobId) && (disrupting || count < 3));
          if (candidates.length === 0) {
            if (!disrupting && [...appended.values()].every((count) => count >= 3)) return;
            // Real time: the poll interval of this writer's wait for a job no other writer holds.
            await sleep(5);
            continue;
          }
          const [jobId, count] = candidates[Math.floor(Math.random() * candidates.length)]!;
          busy.add(jobId);
          await writer.retrying(() => writer.append(jobId, 1 + Math.floor(Math.random() * 5)));
          appended.set(jobId, count + 1);
          busy.delete(jobId);
        }
      }),
    );
    await Promise.all([writing, chaos]);
    for (let chunk = 0; chunk < JOBS; chunk += 20) {
      await Promise.all(jobIds.slice(chunk, chunk + 20).map((jobId) => writer.retrying(() => writer.cancel(jobId))));
    }
    const outcomes = await Promise.all(subscribers);

    const totals = { cancels: 0, cutOff: 0, events: 0 };
    for (const [index, outcome] of outcomes.entries()) {
      const journal = await readWholeJournal(replica('events', 1).url, alice, jobIds[index]!);
      expect(outcome.received.map((event) => event.sequence)).toEqual(journal.map((event) => event.sequence));
      expect(outcome.received.map((event) => event.hash)).toEqual(journal.map((event) => event.hash));
      expect(outcome.received.at(-1)?.type).toBe('job.cancelled');
      totals.cancels += outcome.cancels;
      totals.cutOff += outcome.cutOff;
      totals.events += outcome.received.length;
    }
    // The state restart cut the events service's upstream, which it
    // reopened (above), and no subscriber noticed: no stream of the events
    // process that lived through it failed.
    const streamOutcomes = logLines(eventsDuringStateRestart!)
      .filter((line) => line['msg'] === 'rpc' && line['rpc'] === '/docket.events.v1.EventService/StreamJobEvents')
      .map((line) => line['code']);
    expect(streamOutcomes.length).toBeGreaterThan(0);
    expect(streamOutcomes.filter((code) => code !== 'ok' && code !== 'canceled')).toEqual([]);
    // The disruptions really happened to these subscribers.
    expect(totals.cancels).toBeGreaterThan(50);
    expect(totals.cutOff).toBeGreaterThanOrEqual(JOBS);
    console.info(`200 subscribers: ${totals.events} events, ${totals.cancels} client cancels, ${totals.cutOff} server-side cut-offs`);
  }, 180_000);
});

/**
 * Whether a failed stream was cut off by a server going away (events
 * restart or crash) rather than refused: UNAVAILABLE, or a transport
 * failure the client library raised itself (no Docket ErrorInfo).
 */
function cutOffByServer(error: unknown): boolean {
  if (!(error instanceof ConnectError)) return false;
  return error.code === Code.Unavailable || seenByConnect(error).domain !== 'docket';
}

/** What one resuming subscriber saw. */
interface FollowOutcome {
  readonly received: Event[];
  /** Streams this subscriber cancelled itself at a random point. */
  readonly cancels: number;
  /** Streams that ended without `end` or failed UNAVAILABLE (events restart or crash). */
  readonly cutOff: number;
}

/**
 * A subscriber the way a careful client writes one: it resumes after the
 * last sequence it received whenever a stream ends without `end` or breaks,
 * and cancels itself at random points (at most twice). Any gap, duplicate
 * or frame after `end` fails the test.
 */
async function follow(events: Client<typeof EventService>, jobId: string): Promise<FollowOutcome> {
  const received: Event[] = [];
  let cancels = 0;
  let cutOff = 0;
  for (let attempt = 0; attempt < 500; attempt += 1) {
    const abort = new AbortController();
    // Real time: the subscriber cancels itself at a random point of the stream.
    const cancelTimer = cancels < 2 && Math.random() < 0.5 ? setTimeout(() => abort.abort(), Math.random() * 1_500) : undefined;
    let ended = false;
    try {
      for await (const frame of events.streamJobEvents({ jobId, afterSequence: received.at(-1)?.sequence ?? 0n }, { signal: abort.signal })) {
        if (ended) throw new Error(`job ${jobId}: a frame after end`);
        if (frame.frame.case === 'end') ended = true;
        if (frame.frame.case !== 'page') continue;
        for (const event of frame.frame.value.events) {
          const expected = (received.at(-1)?.sequence ?? 0n) + 1n;
          if (event.sequence !== expected) throw new Error(`job ${jobId}: got sequence ${event.sequence}, expected ${expected}`);
          received.push(event);
        }
      }
      if (ended) return { received, cancels, cutOff };
      cutOff += 1;
    } catch (error) {
      if (abort.signal.aborted) cancels += 1;
      else if (cutOffByServer(error)) {
        cutOff += 1;
        // Real time: a reconnect back-off, as a careful client has.
        await sleep(100);
      } else throw error;
    } finally {
      clearTimeout(cancelTimer);
    }
  }
  throw new Error(`job ${jobId}: no end after 500 streams`);
}

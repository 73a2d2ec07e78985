import { create, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import type { Principal } from '@docket/auth';
import { EventSchema, type Event } from '@docket/proto/docket/common/v1/event_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { StreamJobEventsRequestSchema, type StreamJobEventsResponse } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { ProgressSchema } from '@docket/proto/docket/common/v1/progress_pb.js';
import {
  ReadJobEventsRequestSchema,
  ReadJobEventsResponseSchema,
  WatchChangesResponseSchema,
  type JobSignalSchema,
  type ReadJobEventsRequest,
  type StateService,
  type WatchChangesRequest,
  type WatchChangesResponse,
} from '@docket/proto/docket/state/v1/state_service_pb.js';
import { FeedCursorCodec, SignalRelay, WakeSignal, createLogger } from '@docket/service-kit';
import { describe, expect, it } from 'vitest';
import type { EventDependencies } from './event-dependencies.js';
import { streamJobEvents } from './job-event-tail.js';
import { JobSignalHub } from './job-signal-hub.js';
import { SharedChangeFeed } from './shared-change-feed.js';
import { JournalPage } from './journal-page.js';
import { encodedAnswer } from '../testing/encoded-answer.js';
import { EVENTS_PER_READ, SECOND_READS_AHEAD_MAX, SharedJournalReads } from './shared-journal-reads.js';

/** The most pages the state service answers a read at once (its `READ_PAGE_COUNT_MAX`). */
const READ_PAGE_COUNT_MAX = 8;
import { SubscriberGauge } from './subscriber-gauge.js';

const JOB_ID = 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa';
const alice: Principal = { subject: 'alice', role: 'user' };

/**
 * One job's journal behind the state RPCs an events process uses, with the
 * faults a real state service has: coalesced and lost signals, and a
 * WatchChanges stream that breaks and cannot be reopened for a while (a
 * restart).
 */
class FakeState {
  readonly events: Event[] = [];
  status = JobStatus.QUEUED;
  /** WatchChanges openings to refuse with UNAVAILABLE before one succeeds. */
  refuseWatches = 0;
  reads = 0;
  readonly #watchers = new Set<{ wake: WakeSignal; broken: boolean; pending: WatchChangesResponse[] }>();

  constructor() {
    this.append(1);
  }

  /** Commits `count` events; `signal: false` commits without telling any watcher (a lost notification). */
  append(count: number, signal = true): void {
    for (let index = 0; index < count; index += 1) {
      this.events.push(create(EventSchema, { jobId: JOB_ID, sequence: BigInt(this.events.length + 1), type: 'worker.step' }));
    }
    if (signal) this.#tell({ latestSequence: BigInt(this.events.length), status: this.status });
  }

  /** Reports progress: news of the job without a journal event. */
  progress(completedUnits: bigint): void {
    this.#tell({ latestSequence: BigInt(this.events.length), status: this.status, progress: create(ProgressSchema, { completedUnits, totalUnits: 10n }) });
  }

  terminate(): void {
    this.status = JobStatus.CANCELLED;
    this.append(1);
  }

  /** Ends every open WatchChanges stream with UNAVAILABLE, as a state restart does. */
  breakWatches(): void {
    for (const watcher of this.#watchers) {
      watcher.broken = true;
      watcher.wake.ring();
    }
  }

  get openWatches(): number {
    return this.#watchers.size;
  }

  readJobEvents = async (request: ReadJobEventsRequest) => {
    this.reads += 1;
    // Real time: a read takes a round trip, as a call to the state service does.
    await new Promise((resolve) => setTimeout(resolve, 1));
    const after = Number(request.afterSequence);
    return create(ReadJobEventsResponseSchema, {
      events: this.events.slice(after, after + request.pageSize * Math.min(Math.max(request.pageCount, 1), READ_PAGE_COUNT_MAX)),
      latestSequence: BigInt(this.events.length),
      status: this.status,
    });
  };

  watchChanges = (_request: WatchChangesRequest, options: { signal: AbortSignal }): AsyncIterable<WatchChangesResponse> => {
    if (this.refuseWatches > 0) {
      this.refuseWatches -= 1;
      return (async function* () {
        throw new ConnectError('connect ECONNREFUSED', Code.Unavailable);
      })();
    }
    const watcher = { wake: new WakeSignal(), broken: false, pending: [create(WatchChangesResponseSchema, { anyQueue: true })] };
    const watchers = this.#watchers;
    return (async function* () {
      watchers.add(watcher);
      try {
        for (;;) {
          yield* watcher.pending.splice(0);
          // An empty tick every 500 ms, as the heartbeat interval asks.
          if ((await watcher.wake.wait(500, options.signal)) === 'aborted') return;
          if (watcher.broken) throw new ConnectError('stream reset', Code.Unavailable);
          if (watcher.pending.length === 0) yield create(WatchChangesResponseSchema, {});
        }
      } finally {
        watchers.delete(watcher);
      }
    })();
  };

  #tell(signal: Omit<MessageInitShape<typeof JobSignalSchema>, '$typeName' | 'jobId'>): void {
    for (const watcher of this.#watchers) {
      watcher.pending.push(create(WatchChangesResponseSchema, { jobSignals: [{ jobId: JOB_ID, ...signal }] }));
      watcher.wake.ring();
    }
  }
}

/** The dependencies of one events process over `state`, its hub started; `close` stops the hub. */
function dependencies(state: FakeState, heartbeatMs = 60_000): EventDependencies & { close(): Promise<void> } {
  const client = state as unknown as Client<typeof StateService>;
  const logger = createLogger('events', () => {});
  const gauge = new SubscriberGauge(logger);
  const hub = new JobSignalHub(client, logger, gauge);
  hub.start();
  return {
    state: client,
    hub,
    // The page as the state service answers it asked for encoded events, as the events process reads it off the wire.
    reads: new SharedJournalReads(async (request) => new JournalPage(encodedAnswer(await state.readJobEvents(create(ReadJobEventsRequestSchema, request))))),
    feed: new SharedChangeFeed(client, hub, logger),
    cursors: new FeedCursorCodec('secret'),
    heartbeatMs,
    gauge,
    close: () => hub.close(),
  };
}

/** Starts a tail over `deps` and collects its frames until it ends or `stop` aborts. */
function tail(deps: EventDependencies) {
  const stop = new AbortController();
  const frames: StreamJobEventsResponse[] = [];
  const done = (async () => {
    const stream = streamJobEvents(
      deps,
      alice,
      create(StreamJobEventsRequestSchema, { jobId: JOB_ID }),
      { signal: stop.signal, drain: new SignalRelay() },
      false,
    );
    for await (const frame of stream) frames.push(frame);
  })();
  const sequences = () => frames.flatMap((frame) => (frame.frame.case === 'page' ? frame.frame.value.events.map((e) => Number(e.sequence)) : []));
  return { stop, frames, done, sequences };
}

/** Polls `condition` every 5 ms until it holds; fails after about 5 s. */
async function until(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 5) {
    if (waited > 5_000) throw new Error('condition not reached');
    // Real time: the poll interval of this wait.
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('streamJobEvents', () => {
  it('sends the backlog, then live events, then end after the terminal event, each sequence once', async () => {
    const state = new FakeState();
    const deps = dependencies(state);
    state.append(300);
    const subscriber = tail(deps);
    await until(() => subscriber.sequences().length === 301);
    state.append(2);
    await until(() => subscriber.sequences().length === 303);
    state.terminate();
    await subscriber.done;
    expect(subscriber.sequences()).toEqual(Array.from({ length: 304 }, (_, index) => index + 1));
    expect(subscriber.frames.at(-1)?.frame.case).toBe('end');
    expect(deps.hub.watcherCount).toBe(0);
    await deps.close();
    expect(state.openWatches).toBe(0);
  });

  it('reads the next two reads of a backlog (EVENTS_PER_READ events each) while the subscriber still holds the first frame, and sends them after, 256 to a frame', async () => {
    const state = new FakeState();
    const deps = dependencies(state);
    state.append(2 * EVENTS_PER_READ + 903);
    const asked: number[] = [];
    const read = state.readJobEvents;
    state.readJobEvents = (request) => (asked.push(Number(request.afterSequence)), read(request));
    const stop = new AbortController();
    const stream = streamJobEvents(deps, alice, create(StreamJobEventsRequestSchema, { jobId: JOB_ID }), { signal: stop.signal, drain: new SignalRelay() }, false);
    const first = await stream.next();
    expect(first.value?.frame.case).toBe('page');
    // The subscriber has not asked for the second frame: the next two reads are under way already, and no more.
    await until(() => asked.length === 3);
    // Real time: a negative assertion: no fourth read is started within 50 ms.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(asked).toEqual([0, EVENTS_PER_READ, 2 * EVENTS_PER_READ]);
    expect(deps.reads.secondReadsAhead).toBe(1);
    const pages: number[][] = [];
    for (let frame = first; !frame.done; frame = await stream.next()) {
      if (frame.value.frame.case === 'page') pages.push(frame.value.frame.value.events.map((event) => Number(event.sequence)));
      if (pages.flat().length === 2 * EVENTS_PER_READ + 904) break;
    }
    expect(pages.flat()).toEqual(Array.from({ length: 2 * EVENTS_PER_READ + 904 }, (_, index) => index + 1));
    expect(pages.map((page) => page.length)).toEqual([...Array.from({ length: (2 * EVENTS_PER_READ + 768) / 256 }, () => 256), 136]);
    expect(asked).toEqual([0, EVENTS_PER_READ, 2 * EVENTS_PER_READ]);
    expect(deps.reads.secondReadsAhead).toBe(0);
    stop.abort();
    await stream.return(undefined);
    await deps.close();
  });

  it('streams a backlog whole from a state service that answers fewer events per read than asked (one from before page_count): reads ahead that miss the cursor are dropped', async () => {
    const state = new FakeState();
    const deps = dependencies(state);
    state.append(2999);
    state.terminate();
    const read = state.readJobEvents;
    state.readJobEvents = (request) => read({ ...request, pageCount: 1 });
    const subscriber = tail(deps);
    await subscriber.done;
    expect(subscriber.sequences()).toEqual(Array.from({ length: 3001 }, (_, index) => index + 1));
    expect(subscriber.frames.at(-1)?.frame.case).toBe('end');
    await deps.close();
  });

  it('holds at most SECOND_READS_AHEAD_MAX second reads ahead over all its tails, and gives every one back when the tails stop', async () => {
    const state = new FakeState();
    const deps = dependencies(state);
    state.append(4999);
    const open = (afterSequence: bigint) => {
      const stop = new AbortController();
      const stream = streamJobEvents(deps, alice, create(StreamJobEventsRequestSchema, { jobId: JOB_ID, afterSequence }), { signal: stop.signal, drain: new SignalRelay() }, false);
      return { stop, stream };
    };
    // Tails at distinct cursors, each holding its first frame: none shares a read with another.
    const tails = Array.from({ length: SECOND_READS_AHEAD_MAX + 16 }, (_, index) => open(BigInt(index)));
    await Promise.all(tails.map(({ stream }) => stream.next()));
    await until(() => deps.reads.inFlight === 0);
    expect(deps.reads.secondReadsAhead).toBe(SECOND_READS_AHEAD_MAX);
    for (const { stop, stream } of tails) {
      stop.abort();
      await stream.return(undefined);
    }
    expect(deps.reads.secondReadsAhead).toBe(0);
    await deps.close();
  });

  it('reads everything after its cursor on each signal, so coalesced and lost signals lose nothing', async () => {
    const state = new FakeState();
    const deps = dependencies(state);
    const subscriber = tail(deps);
    await until(() => subscriber.sequences().length === 1);
    state.append(5, false);
    state.append(1);
    await until(() => subscriber.sequences().length === 7);
    subscriber.stop.abort();
    await subscriber.done;
    await deps.close();
    expect(subscriber.sequences()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('sends progress from the news itself, without a journal read', async () => {
    const state = new FakeState();
    const deps = dependencies(state);
    const subscriber = tail(deps);
    await until(() => subscriber.sequences().length === 1);
    const readsBefore = state.reads;
    state.progress(3n);
    await until(() => subscriber.frames.some((frame) => frame.frame.case === 'progress'));
    const progress = subscriber.frames.find((frame) => frame.frame.case === 'progress');
    expect(progress?.frame.case === 'progress' && progress.frame.value.completedUnits).toBe(3n);
    expect(state.reads).toBe(readsBefore);
    subscriber.stop.abort();
    await subscriber.done;
    await deps.close();
  });

  it('shares one journal read among the tails of one job at one cursor', async () => {
    const state = new FakeState();
    const deps = dependencies(state);
    const subscribers = Array.from({ length: 10 }, () => tail(deps));
    await until(() => subscribers.every((subscriber) => subscriber.sequences().length === 1));
    const readsBefore = state.reads;
    state.append(2);
    await until(() => subscribers.every((subscriber) => subscriber.sequences().length === 3));
    expect(state.reads - readsBefore).toBe(1);
    for (const subscriber of subscribers) subscriber.stop.abort();
    await Promise.all(subscribers.map((subscriber) => subscriber.done));
    await deps.close();
    for (const subscriber of subscribers) expect(subscriber.sequences()).toEqual([1, 2, 3]);
  });

  it('sends no heartbeat while the upstream is lost, and delivers what committed meanwhile once it is back', async () => {
    const state = new FakeState();
    const deps = dependencies(state, 30);
    const subscriber = tail(deps);
    await until(() => subscriber.sequences().length === 1);
    await until(() => subscriber.frames.some((frame) => frame.frame.case === 'heartbeat'));
    state.refuseWatches = 4;
    state.breakWatches();
    await until(() => !deps.hub.live);
    const framesWhenLost = subscriber.frames.length;
    state.append(3, false);
    await until(() => subscriber.sequences().length === 4);
    expect(state.refuseWatches).toBe(0);
    // Silence while lost (the reopens took at least 100 + 200 + 400 + 800 ms, many heartbeat intervals), then the missed events.
    expect(subscriber.frames.slice(framesWhenLost).map((frame) => frame.frame.case)[0]).toBe('page');
    subscriber.stop.abort();
    await subscriber.done;
    await deps.close();
    expect(subscriber.sequences()).toEqual([1, 2, 3, 4]);
    expect(state.openWatches).toBe(0);
  });
});

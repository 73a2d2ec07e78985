import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import type { Principal } from '@docket/auth';
import { EventSchema, type Event } from '@docket/proto/docket/common/v1/event_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { StreamJobEventsRequestSchema, type StreamJobEventsResponse } from '@docket/proto/docket/events/v1/event_service_pb.js';
import {
  ReadJobEventsResponseSchema,
  WatchJobResponseSchema,
  type ReadJobEventsRequest,
  type StateService,
  type WatchJobRequest,
  type WatchJobResponse,
} from '@docket/proto/docket/state/v1/state_service_pb.js';
import { FeedCursorCodec, createLogger } from '@docket/service-kit';
import { describe, expect, it } from 'vitest';
import type { EventDependencies } from './event-dependencies.js';
import { streamJobEvents } from './job-event-tail.js';
import { SubscriberGauge } from './subscriber-gauge.js';
import { WakeSignal } from './wake-signal.js';

const JOB_ID = 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa';
const alice: Principal = { subject: 'alice', role: 'user' };

/**
 * One job's journal behind the two state RPCs a tail uses, with the faults
 * a real state service has: coalesced signals, and WatchJob streams that
 * break and cannot be reopened for a while (a restart).
 */
class FakeState {
  readonly events: Event[] = [];
  status = JobStatus.QUEUED;
  /** WatchJob openings to refuse with UNAVAILABLE before one succeeds. */
  refuseWatches = 0;
  reads = 0;
  readonly #watchers = new Set<{ wake: WakeSignal; broken: boolean }>();

  constructor() {
    this.append(1);
  }

  /** Commits `count` events; `signal: false` commits without telling any watcher (a lost notification). */
  append(count: number, signal = true): void {
    for (let index = 0; index < count; index += 1) {
      this.events.push(create(EventSchema, { jobId: JOB_ID, sequence: BigInt(this.events.length + 1), type: 'worker.step' }));
    }
    if (signal) for (const watcher of this.#watchers) watcher.wake.ring();
  }

  terminate(): void {
    this.status = JobStatus.CANCELLED;
    this.append(1);
  }

  /** Ends every open WatchJob stream with UNAVAILABLE, as a state restart does. */
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
    const after = Number(request.afterSequence);
    return create(ReadJobEventsResponseSchema, {
      events: this.events.slice(after, after + request.pageSize),
      latestSequence: BigInt(this.events.length),
      status: this.status,
    });
  };

  watchJob = (_request: WatchJobRequest, options: { signal: AbortSignal }): AsyncIterable<WatchJobResponse> => {
    if (this.refuseWatches > 0) {
      this.refuseWatches -= 1;
      return (async function* () {
        throw new ConnectError('connect ECONNREFUSED', Code.Unavailable);
      })();
    }
    const watcher = { wake: new WakeSignal(), broken: false };
    const watchers = this.#watchers;
    const head = () => create(WatchJobResponseSchema, { latestSequence: BigInt(this.events.length), status: this.status });
    return (async function* () {
      watchers.add(watcher);
      try {
        yield head();
        for (;;) {
          if ((await watcher.wake.wait(60_000, options.signal)) === 'aborted') return;
          if (watcher.broken) throw new ConnectError('stream reset', Code.Unavailable);
          yield head();
        }
      } finally {
        watchers.delete(watcher);
      }
    })();
  };
}

function dependencies(state: FakeState, heartbeatMs = 60_000): EventDependencies {
  return {
    state: state as unknown as Client<typeof StateService>,
    cursors: new FeedCursorCodec('secret'),
    heartbeatMs,
    gauge: new SubscriberGauge(createLogger('events', () => {})),
  };
}

/** Starts a tail and collects its frames until it ends or `stop` aborts. */
function tail(state: FakeState, heartbeatMs?: number) {
  const stop = new AbortController();
  const frames: StreamJobEventsResponse[] = [];
  const done = (async () => {
    const stream = streamJobEvents(dependencies(state, heartbeatMs), alice, create(StreamJobEventsRequestSchema, { jobId: JOB_ID }), {
      signal: stop.signal,
      drain: new AbortController().signal,
    });
    for await (const frame of stream) frames.push(frame);
  })();
  const sequences = () => frames.flatMap((frame) => (frame.frame.case === 'page' ? frame.frame.value.events.map((e) => Number(e.sequence)) : []));
  return { stop, frames, done, sequences };
}

async function until(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 5) {
    if (waited > 5_000) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('streamJobEvents', () => {
  it('sends the backlog, then live events, then end after the terminal event, each sequence once', async () => {
    const state = new FakeState();
    state.append(300);
    const subscriber = tail(state);
    await until(() => subscriber.sequences().length === 301);
    state.append(2);
    await until(() => subscriber.sequences().length === 303);
    state.terminate();
    await subscriber.done;
    expect(subscriber.sequences()).toEqual(Array.from({ length: 304 }, (_, index) => index + 1));
    expect(subscriber.frames.at(-1)?.frame.case).toBe('end');
    expect(state.openWatches).toBe(0);
  });

  it('reads everything after its cursor on each signal, so coalesced and lost signals lose nothing', async () => {
    const state = new FakeState();
    const subscriber = tail(state);
    await until(() => subscriber.sequences().length === 1);
    state.append(5, false);
    state.append(1);
    await until(() => subscriber.sequences().length === 7);
    subscriber.stop.abort();
    await subscriber.done;
    expect(subscriber.sequences()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('reattaches a broken WatchJob in the background, keeps heartbeating, and delivers what committed meanwhile', async () => {
    const state = new FakeState();
    const subscriber = tail(state, 30);
    await until(() => subscriber.sequences().length === 1);
    state.refuseWatches = 4;
    state.breakWatches();
    state.append(3, false);
    await until(() => subscriber.sequences().length === 4);
    expect(state.refuseWatches).toBe(0);
    const heartbeats = subscriber.frames.filter((frame) => frame.frame.case === 'heartbeat').length;
    expect(heartbeats).toBeGreaterThan(2);
    subscriber.stop.abort();
    await subscriber.done;
    expect(subscriber.sequences()).toEqual([1, 2, 3, 4]);
    expect(state.openWatches).toBe(0);
  });
});

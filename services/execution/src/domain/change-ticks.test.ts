import { describe, expect, it } from 'vitest';
import { createLogger } from '@docket/service-kit';
import { ChangeTicks, type TickFrame } from './change-ticks.js';

/** A hand-driven WatchChanges: each `open` makes a stream the test pushes frames into or breaks. */
class FakeChangeStreams {
  readonly streams: { push(frame?: TickFrame): void; fail(): void; pending(): number }[] = [];

  readonly open = (signal: AbortSignal): AsyncIterable<TickFrame> => {
    const queue: (TickFrame | 'fail')[] = [];
    let wake: (() => void) | undefined;
    const put = (item: TickFrame | 'fail'): void => {
      queue.push(item);
      wake?.();
    };
    this.streams.push({ push: (frame = {}) => put(frame), fail: () => put('fail'), pending: () => queue.length });
    return (async function* () {
      for (;;) {
        while (queue.length === 0) {
          if (signal.aborted) return;
          await new Promise<void>((resolve) => {
            wake = resolve;
            signal.addEventListener('abort', () => resolve(), { once: true });
          });
        }
        const item = queue.shift()!;
        if (item === 'fail') throw new Error('stream broke');
        yield item;
      }
    })();
  };

  get latest(): { push(frame?: TickFrame): void; fail(): void; pending(): number } {
    const stream = this.streams.at(-1);
    if (!stream) throw new Error('no stream opened yet');
    return stream;
  }
}

const quiet = createLogger('execution-test', () => {});
const never = new AbortController().signal;

/** Polls `condition` every 5 ms until it holds, for about a second at most. */
async function until(condition: () => boolean): Promise<void> {
  // Real time: the poll interval of this wait.
  for (let i = 0; i < 200 && !condition(); i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
}

describe('ChangeTicks', () => {
  it('serves any number of waiters from one stream and wakes every one of them on a tick', async () => {
    const streams = new FakeChangeStreams();
    const ticks = new ChangeTicks(streams.open, quiet);
    ticks.start();
    await until(() => streams.streams.length === 1);
    const subscriptions = Array.from({ length: 50 }, () => ticks.subscribe());
    // Each waiter with a signal of its own, as each call has in the service (fifty on one signal would pass Node's listener warning).
    const waits = subscriptions.map((subscription) => subscription.wait(5_000, new AbortController().signal));
    streams.latest.push();
    expect(await Promise.all(waits)).toEqual(Array(50).fill('tick'));
    expect(ticks.streamsOpened).toBe(1);
    for (const subscription of subscriptions) subscription.close();
    expect(ticks.subscriberCount).toBe(0);
    await ticks.close();
  });

  it.each([
    { frame: { claimableQueues: ['email'], anyQueue: false }, wakes: true },
    { frame: { claimableQueues: ['sms', 'email'], anyQueue: false }, wakes: true },
    { frame: { claimableQueues: ['sms'], anyQueue: false }, wakes: false },
    { frame: { claimableQueues: [], anyQueue: false }, wakes: false },
    { frame: { claimableQueues: [], anyQueue: true }, wakes: true },
    { frame: {}, wakes: true },
  ])('wakes a waiter narrowed to its queues for $frame: $wakes', async ({ frame, wakes }) => {
    const streams = new FakeChangeStreams();
    const ticks = new ChangeTicks(streams.open, quiet);
    ticks.start();
    await until(() => streams.streams.length === 1);
    const narrowed = ticks.subscribe();
    narrowed.narrowTo(['email']);
    const everyQueue = ticks.subscribe();
    // A stream's first frame wakes everyone (nothing was announced before it); the frame under test is the next.
    streams.latest.push();
    expect(await everyQueue.wait(1_000, never)).toBe('tick');
    expect(await narrowed.wait(1_000, never)).toBe('tick');
    streams.latest.push(frame);
    expect(await everyQueue.wait(1_000, never)).toBe('tick');
    expect(await narrowed.wait(50, never)).toBe(wakes ? 'tick' : 'timeout');
    await ticks.close();
  });

  it('remembers a tick that arrives before the wait, and counts many ticks as one', async () => {
    const streams = new FakeChangeStreams();
    const ticks = new ChangeTicks(streams.open, quiet);
    ticks.start();
    await until(() => streams.streams.length === 1);
    const subscription = ticks.subscribe();
    streams.latest.push();
    streams.latest.push();
    streams.latest.push();
    await until(() => streams.latest.pending() === 0); // every tick has reached ChangeTicks
    expect(await subscription.wait(1_000, never)).toBe('tick');
    expect(await subscription.wait(50, never)).toBe('timeout');
    await ticks.close();
  });

  it('ends a wait when its signal aborts or it times out', async () => {
    const ticks = new ChangeTicks(new FakeChangeStreams().open, quiet);
    const subscription = ticks.subscribe();
    const cancel = new AbortController();
    const waiting = subscription.wait(5_000, cancel.signal);
    cancel.abort();
    expect(await waiting).toBe('aborted');
    const started = performance.now();
    expect(await subscription.wait(30, never)).toBe('timeout');
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
  });

  it('ends a pending wait when its subscription closes', async () => {
    const ticks = new ChangeTicks(new FakeChangeStreams().open, quiet);
    const subscription = ticks.subscribe();
    const waiting = subscription.wait(5_000, never);
    subscription.close();
    expect(await waiting).toBe('aborted');
    expect(ticks.subscriberCount).toBe(0);
  });

  it('reopens a broken stream with backoff and wakes everyone on the break and on the reconnect', async () => {
    const streams = new FakeChangeStreams();
    const ticks = new ChangeTicks(streams.open, quiet, { minBackoffMs: 20, maxBackoffMs: 40 });
    ticks.start();
    await until(() => streams.streams.length === 1);
    const subscription = ticks.subscribe();
    const onBreak = subscription.wait(5_000, never);
    streams.latest.fail();
    expect(await onBreak).toBe('tick');
    await until(() => streams.streams.length === 2);
    const onReconnect = subscription.wait(5_000, never);
    streams.latest.push();
    expect(await onReconnect).toBe('tick');
    expect(ticks.streamsOpened).toBe(2);
    await ticks.close();
  });

  it('opens nothing more once closed', async () => {
    const streams = new FakeChangeStreams();
    const ticks = new ChangeTicks(streams.open, quiet, { minBackoffMs: 5 });
    ticks.start();
    await until(() => streams.streams.length === 1);
    await ticks.close();
    // Real time: a negative assertion: no stream is reopened within 30 ms (six times the back-off).
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(ticks.streamsOpened).toBe(1);
  });
});

import { describe, expect, it } from 'vitest';
import { delay } from '@docket/contracts';
import { SignalInbox, type JobSignal } from './signal-inbox.js';

const signal = (sequence: number, name = `s${sequence}`): JobSignal => ({ sequence: BigInt(sequence), name, payload: { n: sequence }, redelivered: false });

/** An inbox whose acknowledgements are recorded (and can be made to fail), and its waiting changes. */
function inbox(options: { failAcks?: number } = {}) {
  const acks: bigint[] = [];
  const waiting: boolean[] = [];
  let failures = options.failAcks ?? 0;
  const box = new SignalInbox({
    acknowledge: async (upTo) => {
      // Real time: an acknowledgement takes a moment, as a call to the service does.
      await delay(1);
      if (failures > 0) {
        failures--;
        throw new Error('unavailable');
      }
      acks.push(upTo);
    },
    onWaiting: (value) => waiting.push(value),
  });
  return { box, acks, waiting };
}

/**
 * Lets queued acknowledgements run: the window in which one that is due lands, and one that must not happen would.
 */
// Real time: the SignalInbox takes no clock; 10 ms is ten times an acknowledgement's 1 ms.
const settle = () => delay(10);

describe('SignalInbox', () => {
  it('yields each signal once, in sequence order, however often and in whatever order it is delivered', async () => {
    const { box } = inbox();
    box.deliver([signal(2), signal(1)]);
    box.deliver([signal(1), signal(2), signal(3)]); // a renewal repeats what is not yet acknowledged
    const iterator = box[Symbol.asyncIterator]();
    const seen: bigint[] = [];
    for (let i = 0; i < 3; i++) seen.push(((await iterator.next()) as IteratorYieldResult<JobSignal>).value.sequence);
    box.deliver([signal(2), signal(3), signal(4), signal(4)]);
    seen.push(((await iterator.next()) as IteratorYieldResult<JobSignal>).value.sequence);
    expect(seen).toEqual([1n, 2n, 3n, 4n]);
  });

  it('acknowledges a signal only once the handler asks for the next one, cumulatively', async () => {
    const { box, acks } = inbox();
    box.deliver([signal(1), signal(2), signal(3)]);
    const iterator = box[Symbol.asyncIterator]();
    await iterator.next(); // takes 1
    await settle();
    expect(acks).toEqual([]); // 1 is being handled: not acknowledged yet
    await iterator.next(); // 1 handled, takes 2
    await settle();
    expect(acks).toEqual([1n]);
    await iterator.next(); // 2 handled, takes 3
    await settle();
    expect(acks).toEqual([1n, 2n]);
    await box.flush(); // the handler settled: 3 was taken too
    expect(acks).toEqual([1n, 2n, 3n]);
    expect(box.acknowledged).toBe(3n);
  });

  it('buffers signals that arrive while nobody iterates, and never acknowledges what was not yielded', async () => {
    const { box, acks } = inbox();
    box.deliver([signal(1), signal(2)]);
    await settle();
    expect(acks).toEqual([]);
    const taken: string[] = [];
    for await (const item of box) {
      taken.push(item.name);
      if (item.sequence === 1n) break; // ends the loop having taken only 1
    }
    await settle();
    expect(taken).toEqual(['s1']);
    expect(acks).toEqual([1n]);
    box.end();
    await box.flush();
    expect(acks).toEqual([1n]); // 2 was buffered, never yielded
  });

  it('a later loop continues where an earlier one stopped', async () => {
    const { box } = inbox();
    box.deliver([signal(1), signal(2)]);
    for await (const item of box) {
      expect(item.sequence).toBe(1n);
      break;
    }
    const next = await box[Symbol.asyncIterator]().next();
    expect(next).toEqual({ done: false, value: signal(2) });
  });

  it('wakes a waiting consumer on delivery and says when it starts and stops waiting', async () => {
    const { box, waiting } = inbox();
    const iterator = box[Symbol.asyncIterator]();
    const pending = iterator.next();
    expect(box.waiting).toBe(true);
    expect(waiting).toEqual([true]);
    box.deliver([signal(1)]);
    expect(await pending).toEqual({ done: false, value: signal(1) });
    expect(box.waiting).toBe(false);
    expect(waiting).toEqual([true, false]);
  });

  it('ends every iteration when the attempt ends, acknowledging what was taken', async () => {
    const { box, acks, waiting } = inbox();
    box.deliver([signal(1)]);
    const iterator = box[Symbol.asyncIterator]();
    await iterator.next();
    const pending = iterator.next(); // 1 handled; waits for more
    box.end();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(waiting).toEqual([true, false]);
    await settle();
    expect(acks).toEqual([1n]);
    box.deliver([signal(2)]);
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    expect(await box[Symbol.asyncIterator]().next()).toEqual({ done: true, value: undefined });
  });

  it('tries a failed acknowledgement again with the next signal taken, and at flush', async () => {
    const { box, acks } = inbox({ failAcks: 2 });
    box.deliver([signal(1), signal(2), signal(3)]);
    const iterator = box[Symbol.asyncIterator]();
    await iterator.next();
    await iterator.next(); // ack of 1 fails
    await settle();
    expect(acks).toEqual([]);
    await iterator.next(); // ack up to 2 fails
    await settle();
    expect(acks).toEqual([]);
    await box.flush(); // up to 3 lands
    expect(acks).toEqual([3n]);
  });

  it('sends one acknowledgement at a time, each covering every signal taken by then', async () => {
    const acks: bigint[] = [];
    let inFlight = 0;
    let most = 0;
    const box = new SignalInbox({
      acknowledge: async (upTo) => {
        most = Math.max(most, ++inFlight);
        // Real time: a slow acknowledgement, so that signals are handled while it is in flight.
        await delay(20);
        inFlight--;
        acks.push(upTo);
      },
    });
    box.deliver([1, 2, 3, 4, 5].map((n) => signal(n)));
    const iterator = box[Symbol.asyncIterator]();
    for (let i = 0; i < 5; i++) await iterator.next(); // 1..4 handled while the first ack (of 1) is in flight
    await box.flush();
    expect(most).toBe(1);
    expect(acks).toEqual([1n, 5n]); // the second covers 2..4 handled meanwhile and 5, taken by the time flush asked
  });
});

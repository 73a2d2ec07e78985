import { describe, expect, it } from 'vitest';
import { CoalescingSignal } from './coalescing-signal.js';

const armedTimers = (): number => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
const never = new AbortController().signal;

describe('CoalescingSignal', () => {
  it('merges every value put between two takes into one, and holds nothing once taken', async () => {
    const mailbox = new CoalescingSignal<{ sum: number }>((held, next) => ({ sum: held.sum + next.sum }));
    for (let put = 1; put <= 100; put += 1) mailbox.put({ sum: put });
    expect(await mailbox.take(1_000, never)).toEqual({ sum: 5_050 });
    expect(await mailbox.take(10, never)).toBe('timeout');
    mailbox.put({ sum: 7 });
    expect(await mailbox.take(1_000, never)).toEqual({ sum: 7 });
  });

  it('keeps the later value by default', async () => {
    const mailbox = new CoalescingSignal<number>();
    mailbox.put(1);
    mailbox.put(2);
    expect(await mailbox.take()).toBe(2);
  });

  it('hands a value to a waiting consumer at once, without merging it with an earlier one it already took', async () => {
    const merged: [number, number][] = [];
    const mailbox = new CoalescingSignal<number>((held, next) => {
      merged.push([held, next]);
      return next;
    });
    const waiting = mailbox.take(60_000, never);
    mailbox.put(1);
    expect(await waiting).toBe(1);
    mailbox.put(2);
    expect(await mailbox.take(60_000, never)).toBe(2);
    expect(merged).toEqual([]);
  });

  it('waits without a timer when given no time limit, and ends on abort', async () => {
    const mailbox = new CoalescingSignal<true>();
    const before = armedTimers();
    const stop = new AbortController();
    const waiting = mailbox.take(Number.POSITIVE_INFINITY, stop.signal);
    expect(armedTimers()).toBe(before);
    stop.abort();
    expect(await waiting).toBe('aborted');
  });

  it('ends a pending take when closed, and takes nothing more after', async () => {
    const mailbox = new CoalescingSignal<true>();
    const before = armedTimers();
    const waiting = mailbox.take(60_000, never);
    mailbox.close();
    expect(await waiting).toBe('aborted');
    expect(armedTimers()).toBe(before);
    mailbox.put(true);
    expect(await mailbox.take(60_000, never)).toBe('aborted');
    expect(armedTimers()).toBe(before);
  });
});

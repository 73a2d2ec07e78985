import { describe, expect, it } from 'vitest';
import { WakeSignal } from './wake-signal.js';

const armedTimers = (): number => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;

describe('WakeSignal', () => {
  it('coalesces any number of rings between two waits into one wake-up', async () => {
    const wake = new WakeSignal();
    const never = new AbortController().signal;
    for (let ring = 0; ring < 1_000; ring += 1) wake.ring();
    expect(await wake.wait(1_000, never)).toBe('rung');
    expect(await wake.wait(10, never)).toBe('timeout');
  });

  it('wakes a waiting consumer at once, and times out or aborts otherwise, leaving no timer armed', async () => {
    const wake = new WakeSignal();
    const before = armedTimers();
    const stop = new AbortController();
    const waiting = wake.wait(60_000, stop.signal);
    expect(armedTimers()).toBe(before + 1);
    wake.ring();
    expect(await waiting).toBe('rung');
    expect(armedTimers()).toBe(before);
    const aborted = wake.wait(60_000, stop.signal);
    stop.abort();
    expect(await aborted).toBe('aborted');
    expect(await wake.wait(60_000, stop.signal)).toBe('aborted');
    expect(armedTimers()).toBe(before);
  });
});

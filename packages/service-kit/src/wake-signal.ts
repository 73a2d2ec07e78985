import { CoalescingSignal } from './coalescing-signal.js';

/** Why {@link WakeSignal.wait} returned. */
export type WakeOutcome = 'rung' | 'timeout' | 'aborted';

/**
 * A coalescing wake-up bit: the {@link CoalescingSignal} of `true`. Any
 * number of {@link ring} calls between two waits count as one, so a
 * subscriber holds a single "dirty" bit however fast signals arrive: its
 * memory does not grow with the signal rate, and a slow consumer simply
 * gets one catch-up read per wake.
 */
export class WakeSignal extends CoalescingSignal<true> {
  /** Marks the signal rung and wakes the waiting consumer, if any. */
  ring(): void {
    this.put(true);
  }

  /**
   * Resolves `rung` as soon as the signal is rung (at once if it already
   * was), consuming the ring; otherwise as {@link CoalescingSignal.take}:
   * `timeout` after `timeoutMs`, `aborted` when `signal` aborts or the
   * signal is closed.
   */
  async wait(timeoutMs: number, signal?: AbortSignal): Promise<WakeOutcome> {
    const outcome = await this.take(timeoutMs, signal);
    return outcome === true ? 'rung' : outcome;
  }
}

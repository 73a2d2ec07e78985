/** Why {@link WakeSignal.wait} returned. */
export type WakeOutcome = 'rung' | 'timeout' | 'aborted';

/**
 * A coalescing wake-up between producers (upstream signal frames) and the
 * one consumer loop of a stream. Any number of {@link ring} calls between
 * two waits count as one, so a subscriber holds a single "dirty" bit
 * however fast signals arrive: its memory does not grow with the signal
 * rate, and a slow client simply gets one catch-up read per wake.
 */
export class WakeSignal {
  #rung = false;
  #waiter: ((outcome: WakeOutcome) => void) | undefined;

  /** Marks the signal rung and wakes the waiting consumer, if any. */
  ring(): void {
    this.#rung = true;
    this.#waiter?.('rung');
  }

  /**
   * Resolves `rung` as soon as the signal is rung (at once if it already
   * was), consuming the ring; `timeout` after `timeoutMs`; `aborted` when
   * `signal` aborts. Whatever happens first wins, and the timer and the
   * abort listener are released before the promise settles.
   */
  wait(timeoutMs: number, signal: AbortSignal): Promise<WakeOutcome> {
    if (this.#rung) {
      this.#rung = false;
      return Promise.resolve('rung');
    }
    if (signal.aborted) return Promise.resolve('aborted');
    return new Promise((resolve) => {
      const settle = (outcome: WakeOutcome): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.#waiter = undefined;
        if (outcome === 'rung') this.#rung = false;
        resolve(outcome);
      };
      const onAbort = (): void => settle('aborted');
      const timer = setTimeout(() => settle('timeout'), Math.max(0, timeoutMs));
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiter = settle;
    });
  }
}

import type { StreamSignals } from './event-dependencies.js';
import { WakeSignal } from '@docket/service-kit';

/**
 * What a subscriber's loop does next: `rung` (a signal arrived: check the
 * link and read), `heartbeat` (nothing was sent for the heartbeat
 * interval), `recheck` (the caller's own re-check interval passed),
 * `drain` (server shutdown: send a final frame and return) or `cancelled`
 * (the client went away: return).
 */
export type SessionTurn = 'rung' | 'heartbeat' | 'recheck' | 'drain' | 'cancelled';

/**
 * The pacing every long-lived stream of this service shares: one coalescing
 * wake signal, the client's cancellation and the server's drain folded
 * into one stop signal, and heartbeats after each interval of silence.
 * Holds one timer at a time, released before {@link next} returns.
 */
export class SubscriberSession {
  readonly wake = new WakeSignal();
  #lastFrameAt = performance.now();
  #stopped = false;
  /**
   * Stopping closes the wake signal, so a pending or later wait returns at
   * once: waits need no abort listener of their own (a subscriber waits
   * once per change, and adding and removing a listener costs more than
   * the rest of the wait).
   */
  readonly #onStop = (): void => {
    this.#stopped = true;
    this.wake.close();
  };

  constructor(
    private readonly signals: StreamSignals,
    private readonly heartbeatMs: number,
  ) {
    for (const signal of [signals.signal, signals.drain]) {
      signal.addEventListener('abort', this.#onStop, { once: true });
      if (signal.aborted) this.#onStop();
    }
  }

  /** Whether the client cancelled or the server is draining. */
  get stopping(): boolean {
    return this.#stopped;
  }

  /** Records that a frame was just sent: the heartbeat interval starts again. */
  sent(): void {
    this.#lastFrameAt = performance.now();
  }

  /**
   * Starts the heartbeat interval again without a frame: while the
   * upstream is lost a heartbeat would claim a liveness the stream does not
   * have, so the subscriber hears silence instead.
   */
  quiet(): void {
    this.#lastFrameAt = performance.now();
  }

  /** Waits for the next thing to do; `recheckMs` bounds the wait (default: until the heartbeat is due). */
  async next(recheckMs = Number.POSITIVE_INFINITY): Promise<SessionTurn> {
    const heartbeatInMs = this.heartbeatMs - (performance.now() - this.#lastFrameAt);
    switch (await this.wake.wait(Math.min(heartbeatInMs, recheckMs))) {
      case 'rung':
        return 'rung';
      case 'aborted':
        return this.signals.signal.aborted ? 'cancelled' : 'drain';
      case 'timeout':
        // Timers may fire up to a millisecond early by this clock.
        return performance.now() - this.#lastFrameAt >= this.heartbeatMs - 1 ? 'heartbeat' : 'recheck';
    }
  }

  /** Removes the listeners on the client's and the server's signals. */
  close(): void {
    for (const signal of [this.signals.signal, this.signals.drain]) signal.removeEventListener('abort', this.#onStop);
    this.#onStop();
  }
}

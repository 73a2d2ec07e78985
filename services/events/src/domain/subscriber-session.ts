import type { StreamSignals } from './event-dependencies.js';
import { WakeSignal } from '@docket/service-kit';
import type { JobSignalHub } from './job-signal-hub.js';
import { assertNotLostTooLong, untilLive } from './upstream-liveness.js';

/**
 * What a subscriber's loop does next: `rung` (a signal arrived, or the
 * heartbeat interval passed while the upstream is lost: check the link
 * and read), `heartbeat` (nothing was sent for the heartbeat interval:
 * send a heartbeat), `drain` (server shutdown: send a final heartbeat and
 * return, so the client resumes) or `cancelled` (the client went away:
 * return).
 */
export type SessionTurn = 'rung' | 'heartbeat' | 'drain' | 'cancelled';

/**
 * The pacing every long-lived stream of this service shares: one coalescing
 * wake signal, the client's cancellation and the server's drain folded
 * into it, and heartbeats after each interval of silence while the
 * process's upstream (the state service) is live. While it is lost a
 * heartbeat would claim a liveness the stream does not have, so the
 * subscriber hears silence instead, and the stream fails UNAVAILABLE once
 * it has been lost for longer than the retry budget.
 *
 * A subscriber waits once per change it is told of, so a wait costs no
 * timer and no listener of its own: the session holds one heartbeat timer
 * for its whole life, restarted (not re-created) whenever a frame is sent,
 * and stopping closes the wake signal, which ends a pending or later wait
 * at once. {@link close} releases the timer and the listeners.
 */
export class SubscriberSession {
  readonly wake = new WakeSignal();
  #stopped = false;
  #heartbeatDue = false;
  readonly #heartbeat: NodeJS.Timeout;
  readonly #stopListeningToDrain: () => void;
  readonly #onStop = (): void => {
    this.#stopped = true;
    clearTimeout(this.#heartbeat);
    this.wake.close();
  };

  constructor(
    private readonly signals: StreamSignals,
    heartbeatMs: number,
    private readonly hub: JobSignalHub,
  ) {
    this.#heartbeat = setTimeout(() => {
      this.#heartbeatDue = true;
      this.wake.ring();
    }, heartbeatMs);
    signals.signal.addEventListener('abort', this.#onStop, { once: true });
    if (signals.signal.aborted) this.#onStop();
    // Called at once if the server is already draining.
    this.#stopListeningToDrain = signals.drain.listen(this.#onStop);
  }

  /** Whether the client cancelled or the server is draining. */
  get stopping(): boolean {
    return this.#stopped;
  }

  /** Records that a frame was just sent: the heartbeat interval starts again. */
  sent(): void {
    this.#restart();
  }

  /**
   * Waits until the upstream is live, before a stream's first read: see
   * `untilLive` (UNAVAILABLE when it stays lost past the retry budget).
   */
  untilLive(): Promise<void> {
    return untilLive(this.hub, this.signals.signal);
  }

  /**
   * Waits for the next thing to do. A heartbeat falls due only while the
   * upstream is live, and the caller answers it with a frame (`sent`),
   * which restarts the interval; while it is lost the interval restarts in
   * silence and the turn is `rung`, or the wait fails UNAVAILABLE once the
   * upstream has been lost too long.
   */
  async next(): Promise<SessionTurn> {
    if ((await this.wake.wait(Number.POSITIVE_INFINITY)) === 'aborted') return this.signals.signal.aborted ? 'cancelled' : 'drain';
    if (!this.#heartbeatDue) return 'rung';
    this.#heartbeatDue = false;
    if (this.hub.live) return 'heartbeat';
    assertNotLostTooLong(this.hub);
    this.#restart();
    return 'rung';
  }

  /** Stops listening to the client's signal and the server's drain and releases the heartbeat timer. */
  close(): void {
    this.signals.signal.removeEventListener('abort', this.#onStop);
    this.#stopListeningToDrain();
    this.#onStop();
  }

  #restart(): void {
    this.#heartbeatDue = false;
    if (!this.#stopped) this.#heartbeat.refresh();
  }
}

/**
 * A server-wide signal (the drain, the hard stop) that any number of calls
 * listen to, each at O(1) to start and to stop listening.
 *
 * Node's EventTarget looks through all of a signal's listeners on every
 * `addEventListener` and `removeEventListener` (to refuse duplicates), so
 * N streams listening on one shared AbortSignal cost O(N) each to open
 * and to close. With 10,000 streams open on one events process that walk
 * took more CPU than anything else the process did, and every other call
 * linked to the same signal paid it too: a Health/Check took 8 ms instead
 * of 2.5. Here a listener is one entry of a Set, and a call that wants an
 * AbortSignal of its own gets one that follows the relay ({@link follow}).
 */
export class SignalRelay {
  readonly #source = new AbortController();
  readonly #listeners = new Set<(reason: unknown) => void>();

  /** Whether the relay has aborted. */
  get aborted(): boolean {
    return this.#source.signal.aborted;
  }

  /** The shared signal itself, for holders that are few (a router's unary calls, a background loop). */
  get signal(): AbortSignal {
    return this.#source.signal;
  }

  /**
   * Calls `listener` with the reason when the relay aborts (at once if it
   * has); returns the function that stops listening.
   */
  listen(listener: (reason: unknown) => void): () => void {
    if (this.#source.signal.aborted) {
      listener(this.#source.signal.reason);
      return () => {};
    }
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** An AbortSignal of its own that aborts with the relay, until `until` aborts (the call's end). */
  follow(until: AbortSignal): AbortSignal {
    const follower = new AbortController();
    const stop = this.listen((reason) => follower.abort(reason));
    if (until.aborted) stop();
    else until.addEventListener('abort', stop, { once: true });
    return follower.signal;
  }

  /** How many listeners are held (for tests and `callsInFlight`). */
  get listeners(): number {
    return this.#listeners.size;
  }

  /** Aborts the shared signal and calls every listener, with `reason`. */
  abort(reason?: unknown): void {
    if (this.#source.signal.aborted) return;
    this.#source.abort(reason);
    const listeners = [...this.#listeners];
    this.#listeners.clear();
    for (const listener of listeners) listener(this.#source.signal.reason);
  }
}

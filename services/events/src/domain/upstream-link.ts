import type { SubscriberGauge } from './subscriber-gauge.js';
import { retryTransient } from './transient-failure.js';
import { openUpstreamSignals, type UpstreamSignals } from './upstream-signals.js';

/** What an {@link UpstreamLink} opens and whom it tells. */
export interface UpstreamLinkOptions<T> {
  /** Opens the state-service stream (WatchJob, WatchChanges) with the given signal. */
  readonly open: (signal: AbortSignal) => AsyncIterable<T>;
  /** Each frame after the first; must only note it (coalesce) and wake the subscriber. */
  readonly onFrame: (frame: T) => void;
  /** Wakes the subscriber: the stream broke, or a reattach finished (well or not). */
  readonly onChange: () => void;
  /** The subscriber's cancellation (client gone): tears the link down at once. */
  readonly subscriber: AbortSignal;
  readonly gauge: SubscriberGauge;
}

/**
 * A subscriber's link to a state-service signal stream that survives
 * state-service restarts. {@link attach} opens it (retrying while state is
 * unreachable). When the stream breaks, the next {@link attached} check
 * starts reattaching in the background, so the subscriber's loop keeps
 * sending heartbeats meanwhile; once the new stream's first frame arrives
 * `onChange` fires and the subscriber re-reads after its own cursor, which
 * recovers every commit the broken stream may have missed. A reattach that
 * fails for good (the retry budget ran out, or the job is gone) is thrown
 * by the next {@link attached} check.
 */
export class UpstreamLink<T> {
  #current: UpstreamSignals<T> | undefined;
  #reattaching: Promise<void> | undefined;
  #failure: { readonly error: unknown } | undefined;
  /** Aborts on close or client cancel: ends any open attempt and the stream. */
  readonly #closing = new AbortController();
  readonly #onCancel = (): void => this.#closing.abort();

  constructor(private readonly options: UpstreamLinkOptions<T>) {
    options.subscriber.addEventListener('abort', this.#onCancel, { once: true });
    if (options.subscriber.aborted) this.#closing.abort();
  }

  /** Opens the stream and returns its first frame; errors decided by state (NOT_FOUND) are thrown. */
  async attach(): Promise<T> {
    this.#current = await this.#open();
    return this.#current.first;
  }

  /**
   * True when the stream is up, so a read after the cursor will be followed
   * by a signal for any later commit. False while reattaching (starting a
   * reattach if the stream just broke): reading then could only wait on an
   * unreachable state service.
   */
  attached(): boolean {
    if (this.#failure) throw this.#failure.error;
    if (this.#reattaching) return false;
    if (!this.#current?.broken) return true;
    this.#reattaching = this.#reattach();
    return false;
  }

  /** Cancels the stream and any reattach; resolves once nothing is left running. */
  async close(): Promise<void> {
    this.options.subscriber.removeEventListener('abort', this.#onCancel);
    this.#closing.abort();
    await this.#reattaching;
    await this.#current?.close();
  }

  async #reattach(): Promise<void> {
    try {
      await this.#current?.close();
      this.#current = await this.#open();
      this.options.gauge.reopened();
    } catch (error) {
      this.#failure = { error };
    } finally {
      this.#reattaching = undefined;
      this.options.onChange();
    }
  }

  #open(): Promise<UpstreamSignals<T>> {
    const signal = this.#closing.signal;
    return retryTransient(
      () =>
        openUpstreamSignals(
          this.options.open,
          { onFrame: this.options.onFrame, onBroken: this.options.onChange },
          signal,
          this.options.gauge,
        ),
      signal,
    );
  }
}

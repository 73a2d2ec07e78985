import { retryBackoffCeilingMs } from '@docket/contracts';

/** The pauses of a {@link Backoff}. */
export interface BackoffOptions {
  /** The first pause after a success (or at the start). */
  readonly firstMs: number;
  /** The longest pause; each later one doubles up to it. */
  readonly maxMs: number;
}

/**
 * Exponential backoff without jitter for a loop that retries one thing
 * (reopening a stream, reconnecting, repeating a read): `firstMs`, doubled
 * per consecutive failure, capped at `maxMs`, back to `firstMs` after
 * {@link reset}. The same ceilings as the SDKs' jittered retries
 * (`retryBackoffCeilingMs` of `@docket/contracts`); the server side has
 * one retrier per peer, not a crowd to spread.
 */
export class Backoff {
  #failures = 0;

  constructor(private readonly options: BackoffOptions) {}

  /** The pause after one more failure: `firstMs`, then twice the previous, up to `maxMs`. */
  next(): number {
    this.#failures += 1;
    return retryBackoffCeilingMs(this.#failures, this.options.firstMs, this.options.maxMs);
  }

  /** After a success: the next pause is `firstMs` again. */
  reset(): void {
    this.#failures = 0;
  }

  /** How many pauses {@link next} has handed out since the last {@link reset} (consecutive failures). */
  get failures(): number {
    return this.#failures;
  }
}

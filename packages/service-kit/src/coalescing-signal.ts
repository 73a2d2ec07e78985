/** Why {@link CoalescingSignal.take} returned without a value. */
export type TakeMiss = 'timeout' | 'aborted';

/** The longest timer Node arms (about 24.8 days); longer waits are clamped to it. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A one-slot mailbox between producers and one consumer loop for values
 * that mean "something changed, look again": any number of {@link put}
 * calls between two takes leave one value (`merge` folds a new value into
 * the one not yet taken; by default the later wins), so a slow consumer
 * holds constant memory however fast the producers go, and catches up
 * with one read per wake. A plain wake-up bit is the `true` case
 * ({@link WakeSignal}).
 *
 * One consumer at a time: a second {@link take} while one is pending
 * replaces the first as the one that is woken. Values are never strings,
 * so they cannot be mistaken for a {@link TakeMiss}.
 */
export class CoalescingSignal<T extends object | number | bigint | boolean | symbol> {
  #value: T | undefined;
  #full = false;
  #closed = false;
  #settle: ((outcome: T | TakeMiss) => void) | undefined;

  constructor(private readonly merge: (held: T, next: T) => T = (_held, next) => next) {}

  /** Leaves `value` for the consumer (merged with one it has not taken yet) and wakes it if it waits. Ignored once closed. */
  put(value: T): void {
    if (this.#closed) return;
    this.#value = this.#full ? this.merge(this.#value as T, value) : value;
    this.#full = true;
    const settle = this.#settle;
    if (settle) settle(this.#take());
  }

  /**
   * Resolves the value as soon as there is one (at once if there already
   * is), taking it; `timeout` after `timeoutMs` (default: no limit);
   * `aborted` when `signal` aborts or the mailbox is {@link close}d.
   * Whatever happens first wins, and the timer and the abort listener are
   * released before the promise settles.
   */
  take(timeoutMs: number = Number.POSITIVE_INFINITY, signal?: AbortSignal): Promise<T | TakeMiss> {
    if (this.#full) return Promise.resolve(this.#take());
    if (this.#closed || signal?.aborted) return Promise.resolve('aborted');
    return new Promise((resolve) => {
      const settle = (outcome: T | TakeMiss): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (this.#settle === settle) this.#settle = undefined;
        resolve(outcome);
      };
      const onAbort = (): void => settle('aborted');
      const timer = Number.isFinite(timeoutMs) ? setTimeout(() => settle('timeout'), Math.min(Math.max(0, timeoutMs), MAX_TIMER_MS)) : undefined;
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#settle = settle;
    });
  }

  /** Ends a pending {@link take} with `aborted`; later takes resolve `aborted` at once and puts are ignored. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#value = undefined;
    this.#full = false;
    this.#settle?.('aborted');
  }

  #take(): T {
    const value = this.#value as T;
    this.#value = undefined;
    this.#full = false;
    return value;
  }
}

/**
 * A one-slot mailbox for signals that mean "something changed, look again":
 * a slow reader never makes it grow, later values replace earlier ones
 * (`merge` decides how), and `take` waits until a value arrives or `signal`
 * aborts (then it resolves undefined). Memory per watcher is constant.
 */
export class CoalescingMailbox<T> {
  #value: T | undefined;
  #full = false;
  #wake: (() => void) | undefined;

  constructor(private readonly merge: (held: T, next: T) => T = (_held, next) => next) {}

  /** Leaves `value` for the reader, merged with one it has not taken yet. */
  put(value: T): void {
    this.#value = this.#full ? this.merge(this.#value as T, value) : value;
    this.#full = true;
    this.#wake?.();
  }

  /** The next value; undefined once `signal` has aborted. */
  async take(signal: AbortSignal): Promise<T | undefined> {
    while (!this.#full) {
      if (signal.aborted) return undefined;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          signal.removeEventListener('abort', done);
          this.#wake = undefined;
          resolve();
        };
        this.#wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
    const value = this.#value as T;
    this.#value = undefined;
    this.#full = false;
    return value;
  }
}

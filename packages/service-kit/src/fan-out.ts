/**
 * The in-memory fan-out of one upstream to many local watchers: listeners
 * of one key (a job) and listeners of everything, each registration
 * removable at once by the function it returns. A process holds one
 * upstream (a LISTEN connection, a WatchChanges stream) and any number of
 * watchers cost only a set entry each.
 */
export class FanOut<T> {
  readonly #byKey = new Map<string, Set<(value: T) => void>>();
  readonly #all = new Set<(value: T) => void>();

  /** Calls `listener` with every value delivered for `key`; returns the unsubscribe function. */
  watch(key: string, listener: (value: T) => void): () => void {
    let listeners = this.#byKey.get(key);
    if (!listeners) this.#byKey.set(key, (listeners = new Set()));
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.#byKey.get(key) === listeners) this.#byKey.delete(key);
    };
  }

  /** Calls `listener` with every value delivered for any key; returns the unsubscribe function. */
  watchAll(listener: (value: T) => void): () => void {
    this.#all.add(listener);
    return () => this.#all.delete(listener);
  }

  /** Gives `value` to the listeners of `key` and to the listeners of everything. */
  deliver(key: string, value: T): void {
    for (const listener of this.#byKey.get(key) ?? []) listener(value);
    for (const listener of this.#all) listener(value);
  }

  /** Gives `value` to every listener, of any key or of everything (a "re-read" for all). */
  broadcast(value: T): void {
    for (const listeners of this.#byKey.values()) for (const listener of listeners) listener(value);
    for (const listener of this.#all) listener(value);
  }

  /** How many registrations are open. */
  get count(): number {
    let count = this.#all.size;
    for (const listeners of this.#byKey.values()) count += listeners.size;
    return count;
  }
}

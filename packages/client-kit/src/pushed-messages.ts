/**
 * The messages of a stream as their producer pushes them, in order, as a
 * consumer reads them (an `AsyncIterable`): what one turn pushes is there
 * to be read in that turn; the stream ends once the producer closes it
 * and everything pushed has been read, with the error it was closed with,
 * if any. The worker session's calls travel this way (`WorkSessionClient`),
 * and so do the answers `callBidiStream` reads off its stream.
 */
export class PushedMessages<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  #closed: { readonly error: unknown } | undefined;
  #wake: (() => void) | undefined;

  /** `onTaken` hears how many messages are left each time the consumer takes one. */
  constructor(private readonly onTaken?: (left: number) => void) {}

  /** Messages pushed and not yet read. */
  get waiting(): number {
    return this.#items.length;
  }

  push(message: T): void {
    this.#items.push(message);
    this.#notify();
  }

  /** Ends the stream once what was pushed is read; with `error`, the reader then gets it. */
  close(error?: unknown): void {
    this.#closed ??= { error };
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      while (this.#items.length > 0) {
        const next = this.#items.shift()!;
        this.onTaken?.(this.#items.length);
        yield next;
      }
      if (this.#closed) {
        if (this.#closed.error !== undefined) throw this.#closed.error;
        return;
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }
}

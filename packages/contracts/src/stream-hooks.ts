/** How a response stream ended, as seen by {@link hookStream}. */
export type StreamOutcome =
  | { readonly kind: 'completed' }
  | { readonly kind: 'failed'; readonly error: unknown }
  /** The consumer stopped early (`return()`), e.g. the client went away. */
  | { readonly kind: 'abandoned' };

/** Hooks applied by {@link hookStream}; all optional. */
export interface StreamHooks {
  /** Runs each pull of the source, e.g. inside an AsyncLocalStorage scope. */
  readonly around?: <R>(pull: () => Promise<R>) => Promise<R>;
  /** Replaces an error thrown by the source before it reaches the consumer. */
  readonly mapError?: (error: unknown) => unknown;
  /** Called exactly once, when the stream completes, fails or is abandoned. */
  readonly onSettled?: (outcome: StreamOutcome) => void;
}

/**
 * Wraps a server-streaming response so interceptors can see (and map)
 * errors raised mid-stream and learn when the stream is over: Connect hands
 * interceptors the response before a single message was produced, so
 * wrapping the `next` promise alone misses everything a streaming handler
 * throws.
 */
export function hookStream<T>(source: AsyncIterable<T>, hooks: StreamHooks): AsyncIterable<T> {
  const around = hooks.around ?? (<R>(pull: () => Promise<R>) => pull());
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const it = source[Symbol.asyncIterator]();
      let settled = false;
      const settle = (outcome: StreamOutcome): void => {
        if (settled) return;
        settled = true;
        hooks.onSettled?.(outcome);
      };
      const fail = (error: unknown): never => {
        const mapped = hooks.mapError ? hooks.mapError(error) : error;
        settle({ kind: 'failed', error: mapped });
        throw mapped;
      };
      return {
        async next(): Promise<IteratorResult<T>> {
          try {
            const result = await around(() => it.next());
            if (result.done === true) settle({ kind: 'completed' });
            return result;
          } catch (error) {
            return fail(error);
          }
        },
        async return(value?: unknown): Promise<IteratorResult<T>> {
          settle({ kind: 'abandoned' });
          const result = await around(async () => it.return?.(value));
          return result ?? { done: true, value: undefined };
        },
        async throw(error?: unknown): Promise<IteratorResult<T>> {
          try {
            if (!it.throw) throw error;
            const result = await around(async () => it.throw?.(error));
            if (result?.done !== false) settle({ kind: 'completed' });
            return result ?? { done: true, value: undefined };
          } catch (thrown) {
            return fail(thrown);
          }
        },
      };
    },
  };
}

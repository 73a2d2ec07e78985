/**
 * Resolves after `ms`, or as soon as `signal` aborts (resolving, not
 * rejecting: callers check the signal). The timer never outlives the wait.
 * Shared by the worker SDK and the client SDK (their retry and reconnect
 * backoffs).
 */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });
}

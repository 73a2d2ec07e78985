/** A signal that follows a long-lived parent for the span of one call. */
export interface LinkedSignal {
  readonly signal: AbortSignal;
  /** Detaches from the parent; call it when the call has settled. */
  dispose(): void;
}

/**
 * A fresh signal that aborts when `parent` does, detached again by
 * `dispose()`. Long-lived signals (the worker's, an attempt's) are given
 * to many calls in turn; handing each call its own linked signal keeps the
 * parent's listener list from growing with every call (transports do not
 * always remove the listeners they add).
 */
export function linkedSignal(parent: AbortSignal): LinkedSignal {
  const controller = new AbortController();
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { signal: controller.signal, dispose() {} };
  }
  const follow = (): void => controller.abort(parent.reason);
  parent.addEventListener('abort', follow, { once: true });
  return { signal: controller.signal, dispose: () => parent.removeEventListener('abort', follow) };
}

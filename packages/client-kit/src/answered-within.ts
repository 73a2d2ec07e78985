import { Code, ConnectError } from '@connectrpc/connect';

/** Calls `listener` with the reason when the caller gives up (at once if it has); returns the function that stops listening. */
export type AbortListener = (listener: (reason: unknown) => void) => () => void;

/** How long a caller waits for its answer, and how to hear that it gave up. */
export interface CallerWait {
  readonly timeoutMs?: number | undefined;
  readonly listenForAbort?: AbortListener | undefined;
}

/**
 * `answer`, unless the caller's deadline passes first (DEADLINE_EXCEEDED)
 * or it gives up (CANCELLED), as a call of its own would have ended: what
 * a caller whose request travels in a shared call (a batch of a
 * `RequestBatcher`) sees. The shared call goes on for the others, and may
 * still decide this request; every such request is idempotent by its key
 * or operation id, so a retry replays what was decided.
 */
export function answeredWithin<Response>(answer: Promise<Response>, { timeoutMs, listenForAbort }: CallerWait): Promise<Response> {
  if (!listenForAbort && timeoutMs === undefined) return answer;
  return new Promise<Response>((resolve, reject) => {
    let stopListening = (): void => {};
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => settle(() => reject(new ConnectError('the deadline passed', Code.DeadlineExceeded))), timeoutMs);
    const settle = (finish: () => void): void => {
      clearTimeout(timer);
      stopListening();
      finish();
    };
    // The answer is always taken, even by a caller that already gave up: the batch may still decide
    // (or refuse) its item later, and a rejection nobody takes would end the process.
    answer.then(
      (value) => settle(() => resolve(value)),
      (error: unknown) => settle(() => reject(error)),
    );
    stopListening = listenForAbort?.((reason) => settle(() => reject(ConnectError.from(reason ?? new Error('cancelled'), Code.Canceled)))) ?? stopListening;
  });
}

/** An {@link AbortListener} for `signal`; undefined without one. */
export function abortListenerOfSignal(signal: AbortSignal | undefined): AbortListener | undefined {
  if (!signal) return undefined;
  return (listener) => {
    if (signal.aborted) {
      listener(signal.reason);
      return () => {};
    }
    const onAbort = (): void => listener(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    return () => signal.removeEventListener('abort', onAbort);
  };
}

import { Code, ConnectError } from '@connectrpc/connect';
import type { SubscriberGauge } from './subscriber-gauge.js';
import { STATE_CALL_TIMEOUT_MS } from './transient-failure.js';

/**
 * A state-service server stream whose frames only say "something changed,
 * read again" (WatchJob, WatchChanges), held open for one subscriber.
 */
export interface UpstreamSignals<T> {
  /** The stream's first frame (for WatchJob: the job's head, which also proves it is visible). */
  readonly first: T;
  /** True once the stream stopped by itself (state restarted, network broke), not by {@link close}. */
  readonly broken: boolean;
  /** Cancels the stream and resolves once its frames are no longer read. Idempotent. */
  close(): Promise<void>;
}

/** Callbacks of {@link openUpstreamSignals}. */
export interface UpstreamListener<T> {
  /** Each frame after the first, as it arrives. Must not block or buffer unboundedly. */
  readonly onFrame: (frame: T) => void;
  /** Once, when the stream stops by itself; {@link UpstreamSignals.broken} is then true. */
  readonly onBroken: () => void;
}

/**
 * Opens an upstream signal stream and waits for its first frame (at most
 * STATE_CALL_TIMEOUT_MS, else DEADLINE_EXCEEDED), so errors the state
 * service decides at once (NOT_FOUND for an invisible job) are thrown
 * here, before the subscriber has been sent anything. The rest of
 * the frames are read eagerly and handed to `listener.onFrame` (which
 * coalesces them), so a slow subscriber never makes the state service
 * buffer for it.
 *
 * The stream is cancelled by {@link UpstreamSignals.close} or as soon as
 * `subscriber` aborts (the client went away), whichever comes first, so
 * both hops are torn down even if the subscriber's loop is never resumed.
 */
export async function openUpstreamSignals<T>(
  open: (signal: AbortSignal) => AsyncIterable<T>,
  listener: UpstreamListener<T>,
  subscriber: AbortSignal,
  gauge: SubscriberGauge,
): Promise<UpstreamSignals<T>> {
  const controller = new AbortController();
  const cancel = (): void => controller.abort();
  subscriber.addEventListener('abort', cancel, { once: true });
  if (subscriber.aborted) cancel();

  const frames = open(controller.signal)[Symbol.asyncIterator]();
  let first: IteratorResult<T>;
  let late = false;
  const firstFrameTimer = setTimeout(() => {
    late = true;
    cancel();
  }, STATE_CALL_TIMEOUT_MS);
  try {
    first = await frames.next();
    if (first.done === true) throw new ConnectError('state stream ended before its first frame', Code.Unavailable);
  } catch (error) {
    cancel();
    subscriber.removeEventListener('abort', cancel);
    throw late ? new ConnectError('state stream sent no first frame in time', Code.DeadlineExceeded) : error;
  } finally {
    clearTimeout(firstFrameTimer);
  }
  gauge.opened('upstream_streams');
  const release = (): void => {
    subscriber.removeEventListener('abort', cancel);
    gauge.closed('upstream_streams');
  };

  let broken = false;
  const pumped = (async () => {
    try {
      for (;;) {
        const next = await frames.next();
        if (next.done === true) break;
        listener.onFrame(next.value);
      }
    } catch {
      // Reported below as a break; the subscriber re-reads after its cursor.
    } finally {
      release();
    }
    if (!controller.signal.aborted) {
      broken = true;
      listener.onBroken();
    }
  })();

  return {
    first: first.value,
    get broken() {
      return broken;
    },
    async close() {
      cancel();
      await pumped;
    },
  };
}

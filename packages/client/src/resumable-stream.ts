import { Code } from '@connectrpc/connect';
import { isRetryableFailure } from '@docket/client-kit';
import { delay, retryBackoffMs } from '@docket/contracts';
import { DocketClientError } from './docket-client-error.js';
import { throwIfAborted, type RetryPolicy } from './retry-policy.js';

/** Options of {@link resumableStream}. */
export interface ResumableStreamOptions<F> {
  /** The RPC's name, for error messages. */
  readonly rpc: string;
  /** Bounds consecutive reconnections without a frame in between (`tries`, backoff ceilings). */
  readonly reconnect: RetryPolicy;
  /** The caller's signal: aborting closes the stream and fails with CANCELLED. */
  readonly signal?: AbortSignal | undefined;
  /** A connection silent for this long (no frame, not even a heartbeat) is dropped and reopened. */
  readonly idleTimeoutMs: number;
  /** Whether `frame` is the last one: the stream then finishes instead of reconnecting. */
  readonly isEnd?: (frame: F) => boolean;
  /** Strings scrubbed from error messages (the token). */
  readonly secrets?: readonly string[];
}

/**
 * A server stream that survives disconnects: `open` is called for every
 * connection, and must build its request from what the consumer has
 * processed so far (the last sequence, the latest cursor); it is only
 * called again after every frame yielded before has been consumed, so
 * the consumer's position is exact. A connection that fails in a way
 * {@link isRetryableFailure} accepts, closes without an end frame, or
 * stays silent for `idleTimeoutMs` is reopened after a full-jitter
 * backoff; `reconnect.tries` consecutive reconnections without a single
 * frame give up with the last failure (UNAVAILABLE when the streams
 * merely closed). Any other failure is thrown at once as a
 * {@link DocketClientError}.
 *
 * Breaking out of the iteration closes the current connection.
 */
export async function* resumableStream<F>(
  open: (signal: AbortSignal) => AsyncIterable<F>,
  options: ResumableStreamOptions<F>,
): AsyncGenerator<F, void, undefined> {
  const { rpc, reconnect, signal, idleTimeoutMs, isEnd, secrets = [] } = options;
  let failures = 0;
  for (;;) {
    throwIfAborted(signal, rpc);
    const connection = new AbortController();
    const follow = (): void => connection.abort(signal?.reason);
    signal?.addEventListener('abort', follow, { once: true });
    let idledOut = false;
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    const armIdle = (): void => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => {
        idledOut = true;
        connection.abort(new Error(`${rpc} was silent for ${idleTimeoutMs} ms`));
      }, idleTimeoutMs);
    };
    let lastFailure: unknown;
    try {
      armIdle();
      for await (const frame of open(connection.signal)) {
        armIdle();
        failures = 0;
        yield frame;
        if (isEnd?.(frame)) return;
      }
    } catch (error) {
      throwIfAborted(signal, rpc);
      if (!idledOut && !isRetryableFailure(error)) throw DocketClientError.fromCall(rpc, error, secrets);
      lastFailure = error;
    } finally {
      clearTimeout(idleTimer);
      signal?.removeEventListener('abort', follow);
      connection.abort();
    }
    failures += 1;
    if (failures >= reconnect.tries) {
      throw lastFailure === undefined
        ? new DocketClientError(Code.Unavailable, undefined, `${rpc} closed without its end ${failures} times in a row`)
        : DocketClientError.fromCall(rpc, lastFailure, secrets);
    }
    await delay(retryBackoffMs(failures, reconnect.initialDelayMs, reconnect.maxDelayMs), signal);
  }
}

import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { abortListenerOfSignal, answeredWithin } from './answered-within.js';

/** A promise settled from outside. */
function pending<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

async function failureOf(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error('expected a failure');
}

describe('answeredWithin', () => {
  it('passes the answer and its error through while the caller waits', async () => {
    await expect(answeredWithin(Promise.resolve('done'), { timeoutMs: 1_000 })).resolves.toBe('done');
    const refused = new ConnectError('refused', Code.FailedPrecondition);
    expect(await failureOf(answeredWithin(Promise.reject(refused), { listenForAbort: abortListenerOfSignal(new AbortController().signal) }))).toBe(refused);
  });

  it('ends with DEADLINE_EXCEEDED when the deadline passes first, and still takes the late answer', async () => {
    const answer = pending<string>();
    const failure = await failureOf(answeredWithin(answer.promise, { timeoutMs: 5 }));
    expect(failure.code).toBe(Code.DeadlineExceeded);
    // A rejection after the caller gave up is taken, not left unhandled (vitest fails the run on one).
    answer.reject(new Error('decided too late'));
    await new Promise((resolve) => setTimeout(resolve, 0));
  });

  it('ends with CANCELLED when the signal aborts, at once when it already has', async () => {
    const stop = new AbortController();
    const waiting = answeredWithin(pending<string>().promise, { listenForAbort: abortListenerOfSignal(stop.signal) });
    stop.abort(new Error('the caller left'));
    expect((await failureOf(waiting)).code).toBe(Code.Canceled);
    expect((await failureOf(answeredWithin(pending<string>().promise, { listenForAbort: abortListenerOfSignal(stop.signal) }))).code).toBe(Code.Canceled);
  });
});

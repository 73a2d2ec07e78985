import { Code, ConnectError } from '@connectrpc/connect';
import { callWithRetry } from '@docket/client-kit';
import { docketConnectError } from '@docket/service-kit';
import { describe, expect, it } from 'vitest';
import { stateRetry } from './state-retry.js';

const down = (): ConnectError => new ConnectError('connect ECONNREFUSED', Code.Unavailable);

/** A call to the state service that fails with each of `failures` in turn, then answers `answer`; counts its tries. */
function stateCall<T>(failures: readonly unknown[], answer: T): { call: () => Promise<T>; readonly tries: number } {
  let tries = 0;
  return {
    call: async () => {
      const failure = failures[tries];
      tries += 1;
      if (failure !== undefined) throw failure;
      return answer;
    },
    get tries() {
      return tries;
    },
  };
}

describe('stateRetry', () => {
  const never = new AbortController().signal;

  it('repeats what a restart or the transport caused until the state service answers', async () => {
    const read = stateCall([down(), new ConnectError('protocol error: incomplete envelope', Code.InvalidArgument), new ConnectError('stream reset', Code.Internal)], 'read');
    await expect(callWithRetry(read.call, stateRetry(never))).resolves.toBe('read');
    expect(read.tries).toBe(4);
  });

  it('passes on at once what the state service decided', async () => {
    const notFound = docketConnectError({ code: Code.NotFound, reason: 'NOT_FOUND', message: 'decided by state' });
    const read = stateCall([notFound], 'read');
    await expect(callWithRetry(read.call, stateRetry(never))).rejects.toBe(notFound);
    expect(read.tries).toBe(1);
  });

  it('gives up with the last failure once the budget is spent', async () => {
    const started = Date.now();
    const failures = Array.from({ length: 1_000 }, down);
    const read = stateCall(failures, 'read');
    const failure = await callWithRetry(read.call, stateRetry(never, 200)).catch((error: unknown) => error);
    expect(read.tries).toBeGreaterThan(1);
    expect(failure).toBe(failures[read.tries - 1]);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('stops as soon as the subscriber goes away, ending a backoff at once with the abort', async () => {
    const stop = new AbortController();
    let calls = 0;
    let callsAtAbort = -1;
    let abortedAt = 0;
    const attempt = callWithRetry(async () => {
      calls += 1;
      throw down();
    }, stateRetry(stop.signal, 5_000));
    // Real time: the abort arrives 5 ms into the retries, during a backoff (each try fails at once).
    setTimeout(() => {
      callsAtAbort = calls;
      abortedAt = performance.now();
      stop.abort();
    }, 5);
    const failure: unknown = await attempt.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(performance.now() - abortedAt).toBeLessThan(20);
    expect(callsAtAbort).toBeGreaterThanOrEqual(1);
    expect(calls).toBe(callsAtAbort);
    expect(failure).toBe(stop.signal.reason);
    expect(failure).toMatchObject({ name: 'AbortError' });
  });

  it('makes no further call once a call fails after the subscriber went away, and ends with the abort', async () => {
    const stop = new AbortController();
    let calls = 0;
    const attempt = callWithRetry(async () => {
      calls += 1;
      if (calls === 2) stop.abort(new ConnectError('deadline', Code.DeadlineExceeded));
      throw down();
    }, stateRetry(stop.signal, 5_000));
    const failure: unknown = await attempt.catch((error: unknown) => error);
    expect(calls).toBe(2);
    expect(failure).toMatchObject({ code: Code.DeadlineExceeded });
    expect(failure).toBe(stop.signal.reason);
  });
});

import { Code, ConnectError } from '@connectrpc/connect';
import { docketConnectError } from '@docket/service-kit';
import { describe, expect, it } from 'vitest';
import { isTransientFailure, retryTransient } from './transient-failure.js';

const decided = (code: Code, reason: 'NOT_FOUND' | 'INTERNAL' | 'UNAVAILABLE' | 'DEADLINE_EXCEEDED') =>
  docketConnectError({ code, reason, message: 'decided by state' });

describe('isTransientFailure', () => {
  it('repeats what the transport or a restart caused, never what the state service decided', () => {
    expect(isTransientFailure(new ConnectError('connect ECONNREFUSED', Code.Unavailable))).toBe(true);
    expect(isTransientFailure(new ConnectError('protocol error: incomplete envelope', Code.InvalidArgument))).toBe(true);
    expect(isTransientFailure(new ConnectError('stream reset', Code.Internal))).toBe(true);
    expect(isTransientFailure(new ConnectError('deadline', Code.DeadlineExceeded))).toBe(true);
    expect(isTransientFailure(decided(Code.Unavailable, 'UNAVAILABLE'))).toBe(true);
    expect(isTransientFailure(decided(Code.DeadlineExceeded, 'DEADLINE_EXCEEDED'))).toBe(true);
    expect(isTransientFailure(decided(Code.NotFound, 'NOT_FOUND'))).toBe(false);
    expect(isTransientFailure(decided(Code.Internal, 'INTERNAL'))).toBe(false);
    expect(isTransientFailure(new Error('a bug'))).toBe(false);
  });
});

describe('retryTransient', () => {
  const never = new AbortController().signal;

  it('repeats transient failures until the call succeeds', async () => {
    let calls = 0;
    const result = await retryTransient(async () => {
      calls += 1;
      if (calls < 3) throw new ConnectError('down', Code.Unavailable);
      return 'read';
    }, never);
    expect({ result, calls }).toEqual({ result: 'read', calls: 3 });
  });

  it('passes a decided failure on at once, and the last transient one when the budget runs out', async () => {
    let calls = 0;
    const notFound = decided(Code.NotFound, 'NOT_FOUND');
    await expect(
      retryTransient(async () => {
        calls += 1;
        throw notFound;
      }, never),
    ).rejects.toBe(notFound);
    expect(calls).toBe(1);
    await expect(retryTransient(async () => Promise.reject(new ConnectError('down', Code.Unavailable)), never, 200)).rejects.toMatchObject({
      code: Code.Unavailable,
    });
  });

  it('stops retrying as soon as the subscriber goes away', async () => {
    // Aborted early in the first 50 ms backoff: no further call, and the wait ends at once, not when it would have.
    const stop = new AbortController();
    let calls = 0;
    let callsAtAbort = -1;
    let abortedAt = 0;
    const attempt = retryTransient(
      async () => {
        calls += 1;
        throw new ConnectError('down', Code.Unavailable);
      },
      stop.signal,
      5_000,
    );
    // Real time: the abort arrives 5 ms into the retries, while they are under way.
    setTimeout(() => {
      callsAtAbort = calls;
      abortedAt = performance.now();
      stop.abort();
    }, 5);
    const failure: unknown = await attempt.then(
      () => undefined,
      (error: unknown) => error,
    );
    const settledAfterMs = performance.now() - abortedAt;
    expect(callsAtAbort).toBeGreaterThanOrEqual(1);
    expect(calls - callsAtAbort).toBe(0);
    expect(failure).toMatchObject({ name: 'AbortError' });
    expect(settledAfterMs).toBeLessThan(20);
  });

  it('passes on the failure of a call that ends after the subscriber went away, without another call', async () => {
    const stop = new AbortController();
    const down = new ConnectError('down', Code.Unavailable);
    let calls = 0;
    const attempt = retryTransient(
      async () => {
        calls += 1;
        if (calls === 2) stop.abort();
        throw down;
      },
      stop.signal,
      5_000,
    );
    await expect(attempt).rejects.toBe(down);
    expect(calls).toBe(2);
  });
});

import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import { callWithRetry, type RetrySchedule, type TryOptions } from './call-retry.js';

const FAST: RetrySchedule = { tries: 6, initialDelayMs: 1, maxDelayMs: 4 };

const down = (): ConnectError => new ConnectError('down', Code.Unavailable);

function withReason(code: Code, reason: string): ConnectError {
  return new ConnectError('refused', code, undefined, [{ desc: ErrorInfoSchema, value: { reason, domain: 'docket' } }]);
}

/** A call that fails with `failure()` until its `succeedOn`-th try (never, by default), counting its tries. */
function flaky<T>(failure: () => unknown, answer: T, succeedOn = Infinity): { call: () => Promise<T>; readonly tries: number } {
  let tries = 0;
  return {
    call: async () => {
      tries += 1;
      if (tries < succeedOn) throw failure();
      return answer;
    },
    get tries() {
      return tries;
    },
  };
}

describe('callWithRetry', () => {
  it('retries a call that may have succeeded until it answers, at most `tries` times', async () => {
    const answering = flaky(down, 'ok', 4);
    await expect(callWithRetry(answering.call, { schedule: FAST })).resolves.toBe('ok');
    expect(answering.tries).toBe(4);

    const failing = flaky(down, 'ok');
    const failure = await callWithRetry(failing.call, { schedule: FAST }).catch((error: unknown) => error);
    expect(failing.tries).toBe(6);
    expect(failure).toMatchObject({ code: Code.Unavailable });
  });

  it('throws a failure outside its scope at once, through `thrown`', async () => {
    const conflict = withReason(Code.AlreadyExists, 'IDEMPOTENCY_CONFLICT');
    const refused = flaky(() => conflict, 'ok');
    await expect(callWithRetry(refused.call, { schedule: FAST })).rejects.toBe(conflict);
    expect(refused.tries).toBe(1);

    const decoded = await callWithRetry(refused.call, { schedule: FAST, thrown: (failure) => ({ decoded: failure }) }).catch((error: unknown) => error);
    expect(decoded).toEqual({ decoded: conflict });
  });

  it('retries what may have been applied in the possibly-applied scope, and only that', async () => {
    // The service's own INTERNAL (with ErrorInfo): final for the client, tried again by the worker SDK.
    const internal = flaky(() => withReason(Code.Internal, 'INTERNAL'), 'ok', 3);
    await expect(callWithRetry(internal.call, { schedule: FAST })).rejects.toMatchObject({ code: Code.Internal });
    expect(internal.tries).toBe(1);
    await expect(callWithRetry(internal.call, { schedule: FAST, scope: 'possibly-applied' })).resolves.toBe('ok');

    const stale = flaky(() => withReason(Code.FailedPrecondition, 'STALE_AUTHORITY'), 'ok');
    await expect(callWithRetry(stale.call, { schedule: FAST, scope: 'possibly-applied' })).rejects.toMatchObject({ code: Code.FailedPrecondition });
    expect(stale.tries).toBe(1);
  });

  it('uses full-jitter backoff: a uniform delay up to a ceiling that doubles per try', async () => {
    const waits: number[] = [];
    let last = Date.now();
    let calls = 0;
    await callWithRetry(
      async () => {
        const now = Date.now();
        if (calls > 0) waits.push(now - last);
        last = now;
        calls += 1;
        if (calls < 4) throw down();
      },
      { schedule: { ...FAST, initialDelayMs: 40, maxDelayMs: 1_000 }, random: () => 0.999 },
    );
    // Ceilings 40, 80, 160 ms at the top of the jitter range.
    expect(waits).toHaveLength(3);
    expect(waits[0]).toBeGreaterThanOrEqual(35);
    expect(waits[1]).toBeGreaterThanOrEqual(75);
    expect(waits[2]).toBeGreaterThanOrEqual(155);
    expect(waits[2]).toBeLessThan(400);
  });

  it('tells `onRetry` of each failed try it retries, with the backoff chosen', async () => {
    const retries: [unknown, number, number][] = [];
    const failure = down();
    await callWithRetry(flaky(() => failure, 'ok', 3).call, {
      schedule: { tries: 5, initialDelayMs: 10, maxDelayMs: 15 },
      random: () => 0.5,
      onRetry: (error, tryNumber, backoffMs) => retries.push([error, tryNumber, backoffMs]),
    });
    expect(retries).toEqual([
      [failure, 1, 5],
      [failure, 2, 7.5],
    ]);
  });

  it('hands each try the caller signal and the per-try deadline, when there are', async () => {
    const seen: TryOptions[] = [];
    const signal = new AbortController().signal;
    await callWithRetry(async (options) => seen.push(options), { schedule: { ...FAST, perTryTimeoutMs: 1_234 }, signal });
    await callWithRetry(async (options) => seen.push(options), { schedule: FAST });
    expect(seen).toEqual([{ signal, timeoutMs: 1_234 }, {}]);
  });

  it('starts no try whose backoff would end past the deadline', async () => {
    const failing = flaky(down, 'ok');
    const started = Date.now();
    await expect(
      callWithRetry(failing.call, { schedule: { tries: Infinity, initialDelayMs: 20, maxDelayMs: 20 }, random: () => 0.999, deadline: started + 70 }),
    ).rejects.toMatchObject({ code: Code.Unavailable });
    // Backoffs of about 20 ms: tries at about 0, 20, 40 and 60 ms at the most (60 + 20 > 70), fewer when timers run late.
    expect(failing.tries).toBeGreaterThanOrEqual(2);
    expect(failing.tries).toBeLessThanOrEqual(4);
    expect(Date.now() - started).toBeLessThan(500);
  });

  describe('once the caller aborts', () => {
    it('throws what `cancelled` makes of the signal, without another try', async () => {
      const controller = new AbortController();
      let calls = 0;
      const failure = await callWithRetry(
        async () => {
          calls += 1;
          controller.abort();
          throw down();
        },
        { schedule: FAST, signal: controller.signal, cancelled: (signal) => ({ cancelled: signal.aborted }) },
      ).catch((error: unknown) => error);
      expect(calls).toBe(1);
      expect(failure).toEqual({ cancelled: true });

      const before = flaky(down, 'ok');
      await expect(callWithRetry(before.call, { schedule: FAST, signal: controller.signal, cancelled: () => 'cancelled' })).rejects.toBe('cancelled');
      expect(before.tries).toBe(0);
    });

    it('cuts a backoff short and throws what `cancelled` makes of the signal', async () => {
      const controller = new AbortController();
      let calls = 0;
      const started = Date.now();
      const attempt = callWithRetry(
        async () => {
          calls += 1;
          throw down();
        },
        { schedule: { tries: Infinity, initialDelayMs: 5_000, maxDelayMs: 5_000 }, random: () => 0.999, signal: controller.signal, cancelled: (signal) => signal.reason },
      );
      setTimeout(() => controller.abort(), 20);
      await expect(attempt).rejects.toMatchObject({ name: 'AbortError' });
      expect(calls).toBe(1);
      expect(Date.now() - started).toBeLessThan(1_000);
    });

    it('without `cancelled`, stops the retries and throws the last failure, cutting a backoff short', async () => {
      const controller = new AbortController();
      const failure = down();
      let calls = 0;
      const started = Date.now();
      const attempt = callWithRetry(
        async () => {
          calls += 1;
          throw failure;
        },
        { schedule: { tries: Infinity, initialDelayMs: 5_000, maxDelayMs: 5_000 }, random: () => 0.999, signal: controller.signal },
      );
      setTimeout(() => controller.abort(), 20);
      await expect(attempt).rejects.toBe(failure);
      expect(calls).toBe(1);
      expect(Date.now() - started).toBeLessThan(1_000);
    });

    it('without `cancelled`, still makes a first try', async () => {
      const controller = new AbortController();
      controller.abort();
      const answering = flaky(down, 'ok', 1);
      await expect(callWithRetry(answering.call, { schedule: FAST, signal: controller.signal })).resolves.toBe('ok');
      const failing = flaky(down, 'ok');
      await expect(callWithRetry(failing.call, { schedule: FAST, signal: controller.signal })).rejects.toMatchObject({ code: Code.Unavailable });
      expect(failing.tries).toBe(1);
    });
  });
});

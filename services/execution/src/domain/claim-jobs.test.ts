import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { durationFromMs, timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { isDocketError } from '@docket/contracts';
import {
  ClaimJobsRequestSchema,
  ClaimJobsResponseSchema,
  type ClaimJobsResponse,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import {
  HandleWorkerCallAnswerSchema,
  type HandleWorkerCallRequest,
} from '@docket/proto/docket/state/v1/state_service_pb.js';
import { WakeSignal, type ForwardedDeadline } from '@docket/service-kit';
import { claimJobs, claimWaitMs, MAX_CLAIM_WAIT_MS, type ClaimCall } from './claim-jobs.js';
import type { TickSubscription } from './change-ticks.js';
import type { StateClient } from './worker-call.js';

const EMPTY = create(ClaimJobsResponseSchema, {});
const CLAIMED = create(ClaimJobsResponseSchema, {
  assignments: [{ authority: { attemptId: 'att_0123456789', fence: 1n, workerIncarnation: 'wkr_0123456789' } }],
});

/**
 * A state service whose claim attempts answer from a script (the last
 * answer repeats), with a `next_claimable_at` hint `hintInMs` ahead of each
 * empty answer when given.
 */
function scriptedState(answers: ClaimJobsResponse[], hintInMs?: number) {
  const calls: { request: HandleWorkerCallRequest; options: ForwardedDeadline | undefined; at: number }[] = [];
  const started = performance.now();
  const state = {
    workerCallAnswer(request: HandleWorkerCallRequest, options?: ForwardedDeadline) {
      calls.push({ request, options, at: performance.now() - started });
      const value = answers[Math.min(calls.length - 1, answers.length - 1)]!;
      const nextClaimableAt = hintInMs !== undefined && value.assignments.length === 0 ? timestampFromMs(Date.now() + hintInMs) : undefined;
      const encoded = toBinary(ClaimJobsResponseSchema, value);
      return Promise.resolve(create(HandleWorkerCallAnswerSchema, { response: { case: 'claimJobs', value: encoded }, nextClaimableAt }));
    },
  } as unknown as StateClient;
  return { state, calls };
}

/** claimJobs, its encoded answer decoded. */
async function claim(...args: Parameters<typeof claimJobs>): Promise<ClaimJobsResponse> {
  return fromBinary(ClaimJobsResponseSchema, await claimJobs(...args));
}

/** Ticks that fire when the test says so. */
class ManualTicks {
  readonly #wakes = new Set<WakeSignal>();
  subscribe(): TickSubscription {
    const wake = new WakeSignal();
    this.#wakes.add(wake);
    return {
      narrowTo: () => {},
      wait: async (timeoutMs, signal) => {
        const outcome = await wake.wait(timeoutMs, signal);
        return outcome === 'rung' ? 'tick' : outcome;
      },
      close: () => this.#wakes.delete(wake),
    };
  }
  tick(): void {
    for (const wake of this.#wakes) wake.ring();
  }
  get open(): number {
    return this.#wakes.size;
  }
}

function request(waitMs: number) {
  return create(ClaimJobsRequestSchema, {
    workerIncarnation: 'wkr_0123456789',
    maxJobs: 1,
    wait: durationFromMs(waitMs),
    operationId: 'op_0123456789abcdef',
  });
}

function callContext(timeoutMs?: number) {
  const client = new AbortController();
  const drain = new AbortController();
  const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
  const call: ClaimCall = {
    signal: client.signal,
    drain: drain.signal,
    forward: () => (deadline === undefined ? { signal: client.signal } : { signal: client.signal, timeoutMs: deadline - Date.now() }),
  };
  return { call, client, drain };
}

/** Lets `ms` of fake time pass, running every timer that ends in it. */
const sleep = (ms: number) => vi.advanceTimersByTimeAsync(ms);

/** Whether `promise` has settled yet, readable at any moment. */
function watch<T>(promise: Promise<T>): { readonly settled: boolean; readonly result: Promise<T> } {
  const state = { settled: false, result: promise };
  promise.then(
    () => (state.settled = true),
    () => (state.settled = true),
  );
  return state;
}

describe('claimWaitMs', () => {
  it('reads unset and zero as no wait, caps at 60 s and refuses negative durations', () => {
    expect(claimWaitMs(undefined)).toBe(0);
    expect(claimWaitMs(durationFromMs(0))).toBe(0);
    expect(claimWaitMs(durationFromMs(1_500))).toBe(1_500);
    expect(claimWaitMs(durationFromMs(61_000))).toBe(MAX_CLAIM_WAIT_MS);
    expect(claimWaitMs({ seconds: 10n ** 15n, nanos: 0 } as never)).toBe(MAX_CLAIM_WAIT_MS);
    for (const bad of [{ seconds: -1n, nanos: 0 }, { seconds: 0n, nanos: -5 }]) {
      let thrown: unknown;
      try {
        claimWaitMs(bad as never);
      } catch (error) {
        thrown = error;
      }
      expect(isDocketError(thrown) && thrown.reason === 'INVALID_FIELD' && thrown.fieldViolations[0]?.field).toBe('wait');
    }
  });
});

describe('claimJobs', () => {
  // The wait's clock is faked (timers, Date.now for the deadline and the
  // hint, performance.now for the wait's end), so every pause is checked to
  // the millisecond however busy the machine is.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('makes exactly one attempt when the request does not wait', async () => {
    const { state, calls } = scriptedState([EMPTY]);
    const ticks = new ManualTicks();
    const answer = await claim({ state, ticks, recheckMs: 10 }, 'worker-a', request(0), callContext().call);
    expect(answer.assignments).toEqual([]);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.request.subject).toBe('worker-a');
    expect(ticks.open).toBe(0);
  });

  it('tries again with the very same request when a change ticks, and returns what it claimed', async () => {
    const { state, calls } = scriptedState([EMPTY, CLAIMED]);
    const ticks = new ManualTicks();
    const claiming = claim({ state, ticks, recheckMs: 60_000 }, 'worker-a', request(10_000), callContext().call);
    await sleep(30);
    expect(calls).toHaveLength(1);
    ticks.tick();
    const answer = await claiming;
    expect(answer.assignments).toHaveLength(1);
    expect(calls).toHaveLength(2);
    expect(calls[1]!.request).toEqual(calls[0]!.request);
    expect(ticks.open).toBe(0);
  });

  it('re-checks on its own timer when nothing ticks (run_after passing by time alone)', async () => {
    const { state, calls } = scriptedState([EMPTY, EMPTY, CLAIMED]);
    const claiming = watch(claim({ state, ticks: new ManualTicks(), recheckMs: 40 }, 'w', request(5_000), callContext().call));
    await sleep(100);
    expect(claiming.settled).toBe(true);
    expect((await claiming.result).assignments).toHaveLength(1);
    expect(calls.map((call) => call.at)).toEqual([0, 40, 80]);
  });

  it("tries again when the state service says the next job becomes claimable, without a tick or the re-check", async () => {
    const { state, calls } = scriptedState([EMPTY, CLAIMED], 120);
    const claiming = watch(claim({ state, ticks: new ManualTicks(), recheckMs: 60_000 }, 'w', request(10_000), callContext().call));
    await sleep(200);
    expect(claiming.settled).toBe(true);
    expect((await claiming.result).assignments).toHaveLength(1);
    expect(calls.map((call) => call.at)).toEqual([0, 120]);
  });

  it('answers with no assignments when the wait runs out, after a last try', async () => {
    const { state, calls } = scriptedState([EMPTY]);
    const claiming = watch(claim({ state, ticks: new ManualTicks(), recheckMs: 60_000 }, 'w', request(150), callContext().call));
    await sleep(149);
    expect(claiming.settled).toBe(false);
    await sleep(1);
    expect(claiming.settled).toBe(true);
    expect((await claiming.result).assignments).toEqual([]);
    expect(calls.map((call) => call.at)).toEqual([0, 150]);
  });

  it('ends its wait before the caller deadline instead of running into it', async () => {
    const { state } = scriptedState([EMPTY]);
    const claiming = watch(claim({ state, ticks: new ManualTicks(), recheckMs: 60_000 }, 'w', request(30_000), callContext(600).call));
    // It waits most of the 600 ms deadline, keeping back a quarter of it at most...
    await sleep(449);
    expect(claiming.settled).toBe(false);
    // ...and answers before the deadline, not at it.
    await sleep(1);
    expect(claiming.settled).toBe(true);
    expect((await claiming.result).assignments).toEqual([]);
  });

  it('answers with no assignments at once when the server drains', async () => {
    const { state } = scriptedState([EMPTY]);
    const { call, drain } = callContext();
    const claiming = claim({ state, ticks: new ManualTicks(), recheckMs: 60_000 }, 'w', request(30_000), call);
    await sleep(20);
    const answer = watch(claiming);
    drain.abort();
    // No time passes: the answer must not wait for the 30 s wait to run out.
    await sleep(0);
    expect(answer.settled).toBe(true);
    expect((await claiming).assignments).toEqual([]);
  });

  it('stops waiting when the caller cancels', async () => {
    const { state, calls } = scriptedState([EMPTY]);
    const { call, client } = callContext();
    const claiming = claim({ state, ticks: new ManualTicks(), recheckMs: 60_000 }, 'w', request(30_000), call);
    await sleep(20);
    client.abort(new ConnectError('cancelled', Code.Canceled));
    await expect(claiming).rejects.toMatchObject({ code: Code.Canceled });
    expect(calls).toHaveLength(1);
  });

  it('refuses a negative wait before calling the state service', async () => {
    const { state, calls } = scriptedState([EMPTY]);
    const bad = create(ClaimJobsRequestSchema, { wait: { seconds: -1n, nanos: 0 } });
    await expect(claim({ state, ticks: new ManualTicks(), recheckMs: 10 }, 'w', bad, callContext().call)).rejects.toMatchObject({
      reason: 'INVALID_FIELD',
    });
    expect(calls).toHaveLength(0);
  });
});

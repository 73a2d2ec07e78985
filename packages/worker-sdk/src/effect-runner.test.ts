import { createHash } from 'node:crypto';
import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { JobAbortedError, type AbortKind } from './abort-reason.js';
import { DocketWorkerError } from './docket-worker-error.js';
import {
  EffectRecoverableError,
  effectInputDigest,
  runEffect,
  type EffectCommitContext,
  type EffectJournal,
  type EffectStepContext,
  type EffectSteps,
} from './effect-runner.js';
import { FakeEffectStore, FakeRefusal } from './testing/fake-effect-store.js';
import type { WorkerLogger } from './worker-logger.js';

const KEY = 'payment-capture-order-7781';
const EXTERNAL = 'ch_3QsecretExternalId';

/** The journal calls of one attempt over `store`, refusals as the SDK's client would raise them. */
function journalOver(store: FakeEffectStore, attemptId = 'att_00000001'): EffectJournal {
  const call = async <T>(rpc: string, apply: () => T): Promise<T> => {
    try {
      return apply();
    } catch (error) {
      if (error instanceof FakeRefusal) throw new DocketWorkerError(error.code, error.reason, `${rpc} failed: ${error.reason}`);
      throw error;
    }
  };
  return {
    begin: (kind, key, inputDigest) => call('BeginEffect', () => store.begin(kind, key, inputDigest, attemptId)),
    advance: (record, transition) => call('AdvanceEffect', () => store.advance(record.effectId, record.revision, transition, attemptId)),
  };
}

/** A logger that keeps every line and its fields, to check nothing secret is logged. */
function recordingLogger(): WorkerLogger & { text(): string } {
  const lines: unknown[] = [];
  const keep = (message: string, fields?: unknown) => lines.push({ message, fields });
  return { debug: keep, info: keep, warn: keep, error: keep, text: () => JSON.stringify(lines, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)) };
}

/** Steps that record their calls; `sign` returns {@link EXTERNAL}. */
function recordingSteps(overrides: Partial<EffectSteps> = {}) {
  const calls: string[] = [];
  const seen: (EffectStepContext | EffectCommitContext)[] = [];
  const steps: EffectSteps = {
    prepare: async (step) => {
      calls.push('prepare');
      seen.push(step);
      await overrides.prepare?.(step);
    },
    sign: async (step) => {
      calls.push('sign');
      seen.push(step);
      return overrides.sign ? overrides.sign(step) : EXTERNAL;
    },
    commit: async (step) => {
      calls.push('commit');
      seen.push(step);
      await overrides.commit?.(step);
    },
  };
  return { steps, calls, seen };
}

function abortWith(controller: AbortController, kind: AbortKind): void {
  controller.abort(new JobAbortedError(kind));
}

function run(store: FakeEffectStore, steps: EffectSteps, options: { input?: unknown; signal?: AbortSignal; logger?: WorkerLogger; key?: string; kind?: string } = {}) {
  return runEffect(
    journalOver(store),
    { kind: options.kind ?? 'payment.capture', key: options.key ?? KEY, input: options.input ?? { amount: 5, currency: 'EUR' } },
    steps,
    options.signal ?? new AbortController().signal,
    { logger: options.logger ?? recordingLogger(), jobId: 'job_00000001' },
  );
}

describe('runEffect', () => {
  it('prepares, signs and commits a new effect, recording each step at the revision it last saw', async () => {
    const store = new FakeEffectStore();
    const { steps, calls, seen } = recordingSteps();
    const result = await run(store, steps);
    expect(result).toEqual({ effectId: 'eff_00000001', externalId: EXTERNAL, replayed: false, resumed: false });
    expect(calls).toEqual(['prepare', 'sign', 'commit']);
    expect(store.history).toEqual(['eff_00000001 begin', 'eff_00000001 signed', 'eff_00000001 committed']);
    expect(store.byKey(KEY)).toMatchObject({ state: 'COMMITTED', revision: 3n, externalId: EXTERNAL });
    expect(seen[0]).toMatchObject({ kind: 'payment.capture', key: KEY, input: { amount: 5, currency: 'EUR' }, resumed: false, recovery: undefined });
    expect(seen[2]).toMatchObject({ externalId: EXTERNAL });
  });

  it('binds the key to the SHA-256 of the RFC 8785 canonical JSON of the input', async () => {
    const store = new FakeEffectStore();
    await run(store, recordingSteps().steps, { input: { b: 1, a: [1, 'x'], skipped: undefined } });
    const expected = createHash('sha256').update('{"a":[1,"x"],"b":1}').digest('hex');
    expect(store.byKey(KEY)?.inputDigest).toBe(expected);
    expect(effectInputDigest({ a: [1, 'x'], b: 1 })).toBe(expected);
  });

  it('replays a committed effect with its stored external id and runs no step', async () => {
    const store = new FakeEffectStore();
    await run(store, recordingSteps().steps);
    const again = recordingSteps();
    expect(await run(store, again.steps)).toEqual({ effectId: 'eff_00000001', externalId: EXTERNAL, replayed: true, resumed: true });
    expect(again.calls).toEqual([]);
    expect(store.history).toHaveLength(3);
  });

  it('a commit that fails leaves the effect RECOVERABLE(OUTCOME_UNKNOWN) from SIGNED; the next call resumes and only commits', async () => {
    const store = new FakeEffectStore();
    const failing = recordingSteps({
      commit: () => {
        throw new Error('socket hang up');
      },
    });
    await expect(run(store, failing.steps)).rejects.toThrow('socket hang up');
    expect(store.byKey(KEY)).toMatchObject({ state: 'RECOVERABLE', externalId: EXTERNAL, recovery: { point: 'SIGNED', reason: 'OUTCOME_UNKNOWN', attempt: 1 } });

    const resumed = recordingSteps();
    expect(await run(store, resumed.steps)).toEqual({ effectId: 'eff_00000001', externalId: EXTERNAL, replayed: false, resumed: true });
    expect(resumed.calls).toEqual(['commit']);
    expect(resumed.seen[0]).toMatchObject({ resumed: true, externalId: EXTERNAL, recovery: { point: 'SIGNED', reason: 'OUTCOME_UNKNOWN' } });
    expect(store.history.slice(3)).toEqual(['eff_00000001 resume', 'eff_00000001 committed']);
  });

  it('a sign that fails leaves it RECOVERABLE(DEPENDENCY_UNAVAILABLE) from PREPARED; the next call signs again but does not prepare again', async () => {
    const store = new FakeEffectStore();
    const failing = recordingSteps({
      sign: () => {
        throw new Error('ECONNREFUSED');
      },
    });
    await expect(run(store, failing.steps)).rejects.toThrow('ECONNREFUSED');
    expect(failing.calls).toEqual(['prepare', 'sign']);
    expect(store.byKey(KEY)).toMatchObject({ state: 'RECOVERABLE', externalId: undefined, recovery: { point: 'PREPARED', reason: 'DEPENDENCY_UNAVAILABLE' } });

    const resumed = recordingSteps();
    expect(await run(store, resumed.steps)).toMatchObject({ replayed: false, resumed: true });
    expect(resumed.calls).toEqual(['sign', 'commit']);
    expect(resumed.seen[0]).toMatchObject({ resumed: true, recovery: { reason: 'DEPENDENCY_UNAVAILABLE' } });
  });

  it('records the reason and retry time an EffectRecoverableError names', async () => {
    const retryAt = new Date(Date.now() + 60_000);
    const store = new FakeEffectStore();
    const busy = recordingSteps({
      sign: () => {
        throw new EffectRecoverableError('OUTCOME_UNKNOWN', 'gateway answered 502', { retryNotBefore: retryAt });
      },
    });
    await expect(run(store, busy.steps)).rejects.toMatchObject({ name: 'EffectRecoverableError' });
    expect(store.byKey(KEY)?.recovery).toMatchObject({ point: 'PREPARED', reason: 'OUTCOME_UNKNOWN', retryNotBefore: retryAt });
  });

  it('classifies a timed-out step as DEADLINE_EXCEEDED', async () => {
    const store = new FakeEffectStore();
    const slow = recordingSteps({
      commit: () => {
        throw new DOMException('timed out', 'TimeoutError');
      },
    });
    await expect(run(store, slow.steps)).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(store.byKey(KEY)?.recovery).toMatchObject({ point: 'SIGNED', reason: 'DEADLINE_EXCEEDED' });
  });

  it('a cancel seen before the commit keeps the external id, records the cancellation and rejects with the signal reason', async () => {
    const store = new FakeEffectStore();
    const controller = new AbortController();
    const { steps, calls } = recordingSteps({
      sign: () => {
        abortWith(controller, 'cancel'); // the owner cancels while the request is out
        return EXTERNAL;
      },
    });
    await expect(run(store, steps, { signal: controller.signal })).rejects.toMatchObject({ name: 'JobAbortedError', kind: 'cancel' });
    expect(calls).toEqual(['prepare', 'sign']);
    expect(store.byKey(KEY)).toMatchObject({
      state: 'RECOVERABLE',
      externalId: EXTERNAL,
      cancellation: 'CANCELLED_BEFORE_COMMIT',
      recovery: { point: 'SIGNED', reason: 'CANCELLED_BEFORE_COMMIT' },
    });
  });

  it('a step that fails after a cancel records the cancellation, even when it names a recoverable reason', async () => {
    const store = new FakeEffectStore();
    const controller = new AbortController();
    const { steps } = recordingSteps({
      commit: () => {
        abortWith(controller, 'cancel');
        throw new EffectRecoverableError('OUTCOME_UNKNOWN', 'aborted mid-flight');
      },
    });
    await expect(run(store, steps, { signal: controller.signal })).rejects.toMatchObject({ name: 'EffectRecoverableError' });
    expect(store.byKey(KEY)).toMatchObject({ state: 'RECOVERABLE', cancellation: 'CANCELLED_BEFORE_COMMIT', recovery: { point: 'SIGNED', reason: 'CANCELLED_BEFORE_COMMIT' } });
  });

  it('a step that fails because of a cancel records the cancellation, not a recoverable reason', async () => {
    const store = new FakeEffectStore();
    const controller = new AbortController();
    const { steps } = recordingSteps({
      sign: (step) => {
        abortWith(controller, 'cancel');
        throw step.signal.reason;
      },
    });
    await expect(run(store, steps, { signal: controller.signal })).rejects.toMatchObject({ kind: 'cancel' });
    expect(store.byKey(KEY)).toMatchObject({ state: 'RECOVERABLE', cancellation: 'CANCELLED_BEFORE_COMMIT', recovery: { point: 'PREPARED' } });
  });

  it('a cancel seen after the commit is only noted: the commit stands and the call resolves', async () => {
    const store = new FakeEffectStore();
    const controller = new AbortController();
    const { steps } = recordingSteps({ commit: () => abortWith(controller, 'cancel') });
    expect(await run(store, steps, { signal: controller.signal })).toMatchObject({ externalId: EXTERNAL, replayed: false });
    expect(store.byKey(KEY)).toMatchObject({ state: 'COMMITTED', cancellation: 'OBSERVED_AFTER_COMMIT' });
  });

  it('records INTERRUPTED when a step fails after a pause or shutdown was requested', async () => {
    for (const kind of ['pause', 'shutdown'] as const) {
      const store = new FakeEffectStore();
      const controller = new AbortController();
      const { steps } = recordingSteps({
        commit: (step) => {
          abortWith(controller, kind);
          throw step.signal.reason;
        },
      });
      await expect(run(store, steps, { signal: controller.signal })).rejects.toMatchObject({ kind });
      expect(store.byKey(KEY)?.recovery).toMatchObject({ point: 'SIGNED', reason: 'INTERRUPTED' });
    }
  });

  it('records nothing and runs no step once the attempt is lost', async () => {
    const store = new FakeEffectStore();
    const controller = new AbortController();
    abortWith(controller, 'lost');
    const { steps, calls } = recordingSteps();
    await expect(run(store, steps, { signal: controller.signal })).rejects.toMatchObject({ kind: 'lost' });
    expect(calls).toEqual([]);
    expect(store.byKey(KEY)?.state).toBe('PREPARED');
  });

  it('refuses the same key with another input (IDEMPOTENCY_CONFLICT) without running a step', async () => {
    const store = new FakeEffectStore();
    await run(store, recordingSteps().steps);
    const other = recordingSteps();
    await expect(run(store, other.steps, { input: { amount: 6, currency: 'EUR' } })).rejects.toMatchObject({
      name: 'DocketWorkerError',
      code: Code.AlreadyExists,
      reason: 'IDEMPOTENCY_CONFLICT',
    });
    expect(other.calls).toEqual([]);
  });

  it('checks kind, key, steps and the external id, and leaves an id-less sign OUTCOME_UNKNOWN', async () => {
    const store = new FakeEffectStore();
    const { steps } = recordingSteps();
    await expect(run(store, steps, { key: 'short' })).rejects.toMatchObject({ reason: 'INVALID_OPTION', message: expect.not.stringContaining('short') });
    await expect(run(store, steps, { kind: 'has space' })).rejects.toMatchObject({ reason: 'INVALID_OPTION' });
    await expect(run(store, { sign: () => 'x' } as unknown as EffectSteps)).rejects.toMatchObject({ reason: 'INVALID_OPTION' });
    await expect(run(store, steps, { input: [1, 2] })).rejects.toMatchObject({ reason: 'INVALID_OPTION' });
    expect(store.history).toEqual([]);
    const idless = recordingSteps({ sign: () => '' });
    await expect(run(store, idless.steps)).rejects.toMatchObject({ reason: 'INVALID_OPTION' });
    expect(store.byKey(KEY)?.recovery).toMatchObject({ point: 'PREPARED', reason: 'OUTCOME_UNKNOWN' });
  });

  it('never logs the key, the input or the external id', async () => {
    const logger = recordingLogger();
    const store = new FakeEffectStore();
    const failing = recordingSteps({
      commit: () => {
        throw new Error('boom');
      },
    });
    await expect(run(store, failing.steps, { logger, input: { card: '4242424242424242' } })).rejects.toThrow('boom');
    await run(store, recordingSteps().steps, { logger, input: { card: '4242424242424242' } });
    await run(store, recordingSteps().steps, { logger, input: { card: '4242424242424242' } });
    const text = logger.text();
    expect(text).toContain('eff_00000001'); // it did log
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(EXTERNAL);
    expect(text).not.toContain('4242');
  });
});

import { createHash } from 'node:crypto';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  EffectCancellation,
  EffectDisposition,
  EffectRecoveryReason,
  EffectState,
  type Effect,
} from '@docket/proto/docket/common/v1/effect_pb.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { newIdempotencyKey } from './support/keys.js';
import { ExecutionHarness, quickSweepsEnv } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId, type AttemptRefInit, type RawWorker, type RequestOf } from './support/raw-worker.js';

/*
 * The effect journal (SPEC section 5, source design 004) through the real
 * execution service: BeginEffect replays or conflicts by key, AdvanceEffect
 * moves PREPARED -> SIGNED -> COMMITTED or into RECOVERABLE and back, at
 * the revision the caller names, and a replacement attempt finishes what a
 * lost one began instead of repeating it.
 */

// Real time: the crash test waits for a lost attempt's lease to expire.
// Long enough that a lifecycle case (a fresh attempt nobody renews, about
// six calls) finishes inside it with the suite's files running in parallel;
// at 1.5 s such a case was answered STALE_AUTHORITY under load.
const LEASE_MS = 5_000;

let harness: ExecutionHarness;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'effect-owner', { databaseUrl: await createMigratedTestDatabase('effects'), env: quickSweepsEnv(LEASE_MS) });
});

afterAll(() => harness?.close());

const digestOf = (input: unknown) => createHash('sha256').update(JSON.stringify(input)).digest('hex');

/** A worker holding a fresh job. */
async function holder(label: string, retry = false): Promise<{ worker: RawWorker; attempt: AttemptRefInit; jobId: string; queue: string }> {
  const { worker, queue } = await harness.workerOnFreshQueue(label);
  const job = await harness.submit({
    queue,
    ...(retry ? { retryPolicy: { maxAttempts: 3, initialBackoff: durationFromMs(1), maxBackoff: durationFromMs(1) } } : {}),
  });
  const [assignment] = await worker.claim({ waitMs: 5_000 });
  return { worker, attempt: attemptOf(assignment!), jobId: job.id, queue };
}

type Transition = NonNullable<RequestOf<'advanceEffect'>['transition']>;
const T = {
  signed: (externalId = 'ext-1'): Transition => ({ case: 'signed', value: { externalId } }),
  committed: (externalId = 'ext-1'): Transition => ({ case: 'committed', value: { externalId } }),
  recoverable: (reason = EffectRecoveryReason.OUTCOME_UNKNOWN): Transition => ({ case: 'recoverable', value: { reason } }),
  resume: (): Transition => ({ case: 'resume', value: {} }),
  cancelled: (): Transition => ({ case: 'cancelled', value: {} }),
};

async function begin(worker: RawWorker, attempt: AttemptRefInit, key: string, kind = 'payment.capture', input: unknown = { amount: 5 }) {
  return worker.call('beginEffect', { attempt, kind, idempotencyKey: key, inputDigest: digestOf(input), operationId: newOperationId() });
}

async function advance(worker: RawWorker, attempt: AttemptRefInit, effect: Effect, transition: Transition, expectedRevision = effect.revision) {
  return worker.call('advanceEffect', { attempt, effectId: effect.effectId, expectedRevision, transition, operationId: newOperationId() });
}

/** Drives a fresh effect through `path` (each step must succeed) and returns it. */
async function effectAfter(worker: RawWorker, attempt: AttemptRefInit, path: readonly Transition[]): Promise<Effect> {
  const begun = await begin(worker, attempt, newIdempotencyKey('eff'));
  if (!begun.ok) throw new Error(`BeginEffect refused: ${begun.reason}`);
  let effect = begun.response.effect!;
  for (const step of path) {
    const answer = await advance(worker, attempt, effect, step);
    if (!answer.ok) throw new Error(`${step.case} refused: ${answer.reason}`);
    effect = answer.response.effect!;
  }
  return effect;
}

describe('BeginEffect', () => {
  it('creates a PREPARED record, replays it by key (in any later state), and conflicts on another kind or digest', async () => {
    const { worker, attempt, jobId } = await holder('begin');
    const key = newIdempotencyKey('begin');
    const created = await begin(worker, attempt, key);
    expect(created).toMatchObject({ ok: true, response: { disposition: EffectDisposition.CREATED } });
    const effect = (created as { response: { effect: Effect } }).response.effect;
    expect(effect).toMatchObject({ state: EffectState.PREPARED, revision: 1n, jobId, idempotencyKey: key, cancellation: EffectCancellation.NOT_REQUESTED });
    expect(effect.effectId).toMatch(/^eff_/);
    const signed = await advance(worker, attempt, effect, T.signed());
    expect(signed.ok).toBe(true);
    const replayed = await begin(worker, attempt, key);
    expect(replayed).toMatchObject({ ok: true, response: { disposition: EffectDisposition.REPLAYED, effect: { effectId: effect.effectId, state: EffectState.SIGNED, revision: 2n, externalId: 'ext-1' } } });
    expect(await begin(worker, attempt, key, 'email.send')).toMatchObject({ ok: false, code: Code.AlreadyExists, reason: 'IDEMPOTENCY_CONFLICT' });
    expect(await begin(worker, attempt, key, 'payment.capture', { amount: 6 })).toMatchObject({ ok: false, code: Code.AlreadyExists, reason: 'IDEMPOTENCY_CONFLICT' });
    // The same operation id replays its first answer (CREATED stays CREATED).
    const operationId = newOperationId();
    const request = { attempt, kind: 'k', idempotencyKey: newIdempotencyKey('op'), inputDigest: digestOf(1), operationId };
    const once = await worker.expectOk('beginEffect', request);
    expect((await worker.expectOk('beginEffect', request)).disposition).toBe(once.disposition);
    expect(once.disposition).toBe(EffectDisposition.CREATED);
  });

  it('refuses a malformed key or digest, and a stale attempt', async () => {
    const { worker, attempt } = await holder('begin-bad');
    expect(await worker.call('beginEffect', { attempt, kind: 'k', idempotencyKey: 'short', inputDigest: digestOf(1), operationId: newOperationId() })).toMatchObject({ ok: false, reason: 'INVALID_FIELD' });
    expect(await worker.call('beginEffect', { attempt, kind: 'k', idempotencyKey: newIdempotencyKey('k'), inputDigest: digestOf(1).toUpperCase(), operationId: newOperationId() })).toMatchObject({ ok: false, reason: 'INVALID_FIELD' });
    expect(await worker.call('beginEffect', { attempt: { ...attempt, fence: 42n }, kind: 'k', idempotencyKey: newIdempotencyKey('k'), inputDigest: digestOf(1), operationId: newOperationId() })).toMatchObject({ ok: false, reason: 'STALE_AUTHORITY' });
  });
});

describe('AdvanceEffect: the lifecycle of source design 004', () => {
  const cases: readonly { name: string; path: Transition[]; step: Transition; state?: EffectState; cancellation?: EffectCancellation; point?: EffectState; refused?: string }[] = [
    { name: 'PREPARED -> SIGNED', path: [], step: T.signed(), state: EffectState.SIGNED },
    { name: 'PREPARED -> COMMITTED is illegal', path: [], step: T.committed(), refused: 'ILLEGAL_TRANSITION' },
    { name: 'SIGNED -> COMMITTED with the same external id', path: [T.signed()], step: T.committed(), state: EffectState.COMMITTED },
    { name: 'SIGNED -> COMMITTED with another external id', path: [T.signed()], step: T.committed('ext-2'), refused: 'INVALID_FIELD' },
    { name: 'SIGNED -> SIGNED is illegal', path: [T.signed()], step: T.signed('ext-2'), refused: 'ILLEGAL_TRANSITION' },
    { name: 'PREPARED -> RECOVERABLE (point PREPARED)', path: [], step: T.recoverable(), state: EffectState.RECOVERABLE, point: EffectState.PREPARED },
    { name: 'SIGNED -> RECOVERABLE (point SIGNED)', path: [T.signed()], step: T.recoverable(), state: EffectState.RECOVERABLE, point: EffectState.SIGNED },
    { name: 'RECOVERABLE -> resume to PREPARED', path: [T.recoverable()], step: T.resume(), state: EffectState.PREPARED },
    { name: 'RECOVERABLE -> resume to SIGNED', path: [T.signed(), T.recoverable()], step: T.resume(), state: EffectState.SIGNED },
    { name: 'RECOVERABLE -> RECOVERABLE is illegal', path: [T.recoverable()], step: T.recoverable(), refused: 'ILLEGAL_TRANSITION' },
    { name: 'PREPARED -> resume is illegal', path: [], step: T.resume(), refused: 'ILLEGAL_TRANSITION' },
    { name: 'a worker may not name CANCELLED_BEFORE_COMMIT', path: [], step: T.recoverable(EffectRecoveryReason.CANCELLED_BEFORE_COMMIT), refused: 'INVALID_FIELD' },
    { name: 'cancelled before the commit', path: [T.signed()], step: T.cancelled(), state: EffectState.RECOVERABLE, cancellation: EffectCancellation.CANCELLED_BEFORE_COMMIT, point: EffectState.SIGNED },
    { name: 'a resume clears a cancellation before the commit', path: [T.cancelled()], step: T.resume(), state: EffectState.PREPARED, cancellation: EffectCancellation.NOT_REQUESTED },
    { name: 'cancelled after the commit: only observed, the commit stands', path: [T.signed(), T.committed()], step: T.cancelled(), state: EffectState.COMMITTED, cancellation: EffectCancellation.OBSERVED_AFTER_COMMIT },
    { name: 'COMMITTED refuses a recovery', path: [T.signed(), T.committed()], step: T.recoverable(), refused: 'ILLEGAL_TRANSITION' },
    { name: 'COMMITTED refuses a resume', path: [T.signed(), T.committed()], step: T.resume(), refused: 'ILLEGAL_TRANSITION' },
    { name: 'COMMITTED refuses another commit', path: [T.signed(), T.committed()], step: T.committed(), refused: 'ILLEGAL_TRANSITION' },
  ];

  let worker: RawWorker;
  let attempt: AttemptRefInit;
  // A fresh attempt for every test: with the short lease nobody renews, one
  // shared attempt would expire under load and answer STALE_AUTHORITY instead.
  beforeEach(async () => {
    ({ worker, attempt } = await holder('lifecycle'));
  });

  it.each(cases)('$name', async ({ path, step, state, cancellation, point, refused }) => {
    const effect = await effectAfter(worker, attempt, path);
    const answer = await advance(worker, attempt, effect, step);
    if (refused) {
      expect(answer).toMatchObject({ ok: false, reason: refused });
      const again = await begin(worker, attempt, effect.idempotencyKey);
      expect(again).toMatchObject({ ok: true, response: { effect: { revision: effect.revision, state: effect.state } } });
      return;
    }
    expect(answer.ok).toBe(true);
    const next = (answer as { response: { effect: Effect } }).response.effect;
    expect(next.revision).toBe(effect.revision + 1n);
    if (state !== undefined) expect(next.state).toBe(state);
    if (cancellation !== undefined) expect(next.cancellation).toBe(cancellation);
    if (point !== undefined) expect(next.recovery?.point).toBe(point);
    if (state === EffectState.COMMITTED) expect(next.committedAt).toBeDefined();
    if (state === EffectState.SIGNED || state === EffectState.COMMITTED) expect(next.externalId).toBe('ext-1');
  });

  it('names the revision it expects: a stale one is ABORTED, REVISION_MISMATCH, and changes nothing', async () => {
    const effect = await effectAfter(worker, attempt, [T.signed()]);
    const stale = await advance(worker, attempt, effect, T.committed(), 1n);
    expect(stale).toMatchObject({ ok: false, code: Code.Aborted, reason: 'REVISION_MISMATCH' });
    expect(await begin(worker, attempt, effect.idempotencyKey)).toMatchObject({ ok: true, response: { effect: { state: EffectState.SIGNED, revision: 2n } } });
  });

  it('counts recoveries across resumes', async () => {
    const effect = await effectAfter(worker, attempt, [T.recoverable(), T.resume(), T.recoverable(EffectRecoveryReason.DEPENDENCY_UNAVAILABLE)]);
    expect(effect.recovery).toMatchObject({ attempt: 2, reason: EffectRecoveryReason.DEPENDENCY_UNAVAILABLE, attemptId: attempt.attemptId });
  });

  it('an unknown effect, or one of another job, is NOT_FOUND', async () => {
    const other = await holder('other-job');
    const foreign = await effectAfter(other.worker, other.attempt, []);
    expect(await advance(worker, attempt, foreign, T.signed())).toMatchObject({ ok: false, code: Code.NotFound });
  });
});

describe('recovery by a replacement attempt', () => {
  it('finishes an effect whose worker was killed between SIGNED and COMMITTED; the side effect happens exactly once', async () => {
    // The external system: it applies each request once per idempotency key and names it by an external id.
    const applied = new Map<string, number>();
    const external = (key: string) => {
      applied.set(key, (applied.get(key) ?? 0) + 1);
      return `charge-${createHash('sha256').update(key).digest('hex').slice(0, 12)}`;
    };

    const { worker: first, attempt, jobId, queue } = await holder('recover', true);
    const key = newIdempotencyKey('charge');
    const begun = await begin(first, attempt, key);
    const effect = (begun as { response: { effect: Effect } }).response.effect;
    const externalId = external(key);
    const signed = await advance(first, attempt, effect, T.signed(externalId));
    expect(signed.ok).toBe(true);
    await first.crash(); // kill -9 before COMMITTED

    await harness.waitForStatus(jobId, 'QUEUED', 10_000);
    const second = await harness.worker();
    await second.register(`recover-b-${queue}`, [queue], 1);
    const [assignment] = await second.claim({ waitMs: 5_000 });
    const replacement = attemptOf(assignment!);
    const { effects } = await second.expectOk('listRecoverableEffects', { attempt: replacement, limit: 0 });
    expect(effects.map((found) => [found.effectId, found.state, found.externalId])).toEqual([[effect.effectId, EffectState.SIGNED, externalId]]);
    // The replacement resumes from the record instead of repeating the charge.
    const resumed = await begin(second, replacement, key);
    expect(resumed).toMatchObject({ ok: true, response: { disposition: EffectDisposition.REPLAYED, effect: { state: EffectState.SIGNED } } });
    const current = (resumed as { response: { effect: Effect } }).response.effect;
    const committed = await advance(second, replacement, current, T.committed(current.externalId));
    expect(committed).toMatchObject({ ok: true, response: { effect: { state: EffectState.COMMITTED } } });
    expect((await second.expectOk('listRecoverableEffects', { attempt: replacement, limit: 0 })).effects).toEqual([]);
    expect(applied.get(key)).toBe(1);
    const types = await harness.eventTypes(jobId);
    expect(types.filter((type) => type.startsWith('effect.'))).toEqual(['effect.prepared', 'effect.signed', 'effect.committed']);
  });

  it('refuses a limit above 256 and a stale attempt', async () => {
    const { worker, attempt } = await holder('list-bad');
    expect(await worker.call('listRecoverableEffects', { attempt, limit: 257 })).toMatchObject({ ok: false, code: Code.InvalidArgument, reason: 'LIMIT_EXCEEDED' });
    expect(await worker.call('listRecoverableEffects', { attempt: { ...attempt, attemptId: 'att_nobodyatall0000000000000' }, limit: 1 })).toMatchObject({ ok: false, reason: 'STALE_AUTHORITY' });
  });
});

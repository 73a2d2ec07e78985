import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignalReconcileAction } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { SignalState, type Signal } from '@docket/proto/docket/common/v1/signal_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { failureOf } from './support/clients.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { docketVerify } from './support/docket-cli.js';
import { newIdempotencyKey } from './support/keys.js';
import { ExecutionHarness, freshQueue, quickSweepsEnv } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId, type RawWorker } from './support/raw-worker.js';

/*
 * Signals (SPEC section 5): the owner's SendSignal appends to the job's
 * inbox; the worker gets pending signals in its envelope and renewals and
 * acknowledges them, fenced. A lost attempt leaves what it received but did
 * not acknowledge UNKNOWN, which blocks new signals until the owner
 * reconciles: nothing is silently dropped or silently repeated.
 */

const LEASE_MS = 1_500;

let harness: ExecutionHarness;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'signal-owner', { databaseUrl: await createMigratedTestDatabase('signals'), env: quickSweepsEnv(LEASE_MS) });
});

afterAll(() => harness?.close());

const send = (jobId: string, name: string, payload: Record<string, number> = {}, idempotencyKey = newIdempotencyKey('signal')) =>
  harness.admission.sendSignal({ idempotencyKey, jobId, name, payload });
const reconcile = (jobId: string, action: SignalReconcileAction) =>
  harness.admission.reconcileSignals({ idempotencyKey: newIdempotencyKey('reconcile'), jobId, action });
const summary = (signals: readonly Signal[]) => signals.map((signal) => ({ sequence: signal.sequence, name: signal.name, redelivered: signal.redelivered }));

async function signalStates(jobId: string): Promise<Record<string, string>> {
  const { rows } = await harness.sql.query<{ sequence: string; state: string }>('select sequence, state from job_signals where job_id = $1 order by sequence', [jobId]);
  return Object.fromEntries(rows.map((row) => [row.sequence, row.state]));
}

async function claimOne(worker: RawWorker) {
  const [assignment] = await worker.claim({ waitMs: 5_000 });
  if (!assignment) throw new Error('nothing claimed');
  return assignment;
}

describe('SendSignal', () => {
  it('gives each signal the next per-job sequence, journals it, and replays by key', async () => {
    const job = await harness.submit({ queue: freshQueue('send') });
    const key = newIdempotencyKey('send');
    const first = await send(job.id, 'approve-batch', { n: 1 }, key);
    expect(first.signal).toMatchObject({ jobId: job.id, sequence: 1n, name: 'approve-batch', payload: { n: 1 }, state: SignalState.PENDING });
    expect(first.replayed).toBe(false);
    expect((await send(job.id, 'approve-batch', { n: 1 }, key)).replayed).toBe(true);
    const conflict = await failureOf(send(job.id, 'approve-batch', { n: 2 }, key));
    expect([conflict.code, conflict.reason]).toEqual([Code.AlreadyExists, 'IDEMPOTENCY_CONFLICT']);
    expect((await send(job.id, 'second')).signal?.sequence).toBe(2n);
    expect(await harness.eventTypes(job.id)).toEqual(['job.admitted', 'signal.received', 'signal.received']);
    expect((await harness.admission.getJob({ jobId: job.id })).job?.latestSignalSequence).toBe(2n);
  });

  it('refuses a malformed name or an oversized payload and changes nothing', async () => {
    const job = await harness.submit({ queue: freshQueue('bad-signal') });
    const before = await harness.footprint(job.id);
    const badName = await failureOf(send(job.id, 'has space'));
    expect([badName.code, badName.reason]).toEqual([Code.InvalidArgument, 'INVALID_FIELD']);
    const big = await failureOf(harness.admission.sendSignal({ idempotencyKey: newIdempotencyKey('big'), jobId: job.id, name: 'big', payload: { blob: 'x'.repeat(70_000) } }));
    expect([big.code, big.reason]).toEqual([Code.InvalidArgument, 'LIMIT_EXCEEDED']);
    expect(await harness.footprint(job.id)).toEqual(before);
  });

  it('refuses signals to a job that has ended', async () => {
    const job = await harness.submit({ queue: freshQueue('ended') });
    await harness.admission.cancelJob({ idempotencyKey: newIdempotencyKey('cancel'), jobId: job.id });
    const refused = await failureOf(send(job.id, 'late'));
    expect([refused.code, refused.reason]).toEqual([Code.FailedPrecondition, 'ILLEGAL_TRANSITION']);
  });
});

describe('delivery and acknowledgement', () => {
  it('hands pending signals out in the envelope and in renewals until acknowledged, fenced', async () => {
    const { worker, queue } = await harness.workerOnFreshQueue('deliver');
    const job = await harness.submit({ queue });
    await send(job.id, 'one');
    const assignment = await claimOne(worker);
    const attempt = attemptOf(assignment);
    expect(summary(assignment.envelope!.pendingSignals)).toEqual([{ sequence: 1n, name: 'one', redelivered: false }]);
    await send(job.id, 'two');
    const renewed = await worker.expectOk('renewAttempt', { attempt, operationId: newOperationId() });
    expect(summary(renewed.pendingSignals).map((signal) => signal.sequence)).toEqual([1n, 2n]);
    expect(renewed.pendingSignals.every((signal) => signal.state === SignalState.DELIVERED && signal.attemptId === attempt.attemptId)).toBe(true);
    const tooFar = await worker.call('ackSignals', { attempt, operationId: newOperationId(), upToSequence: 3n });
    expect(tooFar).toMatchObject({ ok: false, code: Code.InvalidArgument, reason: 'INVALID_FIELD' });
    const stale = await worker.call('ackSignals', { attempt: { ...attempt, fence: 99n }, operationId: newOperationId(), upToSequence: 1n });
    expect(stale).toMatchObject({ ok: false, reason: 'STALE_AUTHORITY' });
    await worker.expectOk('ackSignals', { attempt, operationId: newOperationId(), upToSequence: 1n });
    await worker.expectOk('ackSignals', { attempt, operationId: newOperationId(), upToSequence: 1n }); // again: a no-op
    const later = await worker.expectOk('renewAttempt', { attempt, operationId: newOperationId() });
    expect(later.pendingSignals.map((signal) => signal.sequence)).toEqual([2n]);
    expect(await signalStates(job.id)).toEqual({ 1: 'ACKNOWLEDGED', 2: 'DELIVERED' });
  });
});

describe('a lost attempt', () => {
  it('leaves unacknowledged signals UNKNOWN; new signals wait for ReconcileSignals, REDELIVER flags them, DISCARD drops them', async () => {
    const queue = freshQueue('lost');
    const first = await harness.worker();
    await first.register(`lost-a-${queue}`, [queue], 1);
    const job = await harness.submit({ queue, retryPolicy: { maxAttempts: 5, initialBackoff: durationFromMs(1), maxBackoff: durationFromMs(1) } });
    await send(job.id, 's1');
    await send(job.id, 's2');
    const assignment = await claimOne(first);
    const attempt = attemptOf(assignment);
    await first.expectOk('ackSignals', { attempt, operationId: newOperationId(), upToSequence: 2n });
    for (const name of ['s3', 's4', 's5']) await send(job.id, name);
    const renewed = await first.expectOk('renewAttempt', { attempt, operationId: newOperationId() });
    expect(renewed.pendingSignals.map((signal) => signal.sequence)).toEqual([3n, 4n, 5n]);
    await first.expectOk('ackSignals', { attempt, operationId: newOperationId(), upToSequence: 3n });
    await first.crash(); // kill -9: it received 3..5 and acknowledged 3

    await harness.waitForStatus(job.id, 'QUEUED', 10_000);
    expect(await signalStates(job.id)).toEqual({ 1: 'ACKNOWLEDGED', 2: 'ACKNOWLEDGED', 3: 'ACKNOWLEDGED', 4: 'UNKNOWN', 5: 'UNKNOWN' });
    expect((await harness.admission.getJob({ jobId: job.id })).job?.unresolvedSignals).toBe(2);
    const refused = await failureOf(send(job.id, 's6'));
    expect([refused.code, refused.reason]).toEqual([Code.FailedPrecondition, 'SIGNALS_UNRESOLVED']);

    // The next attempt runs, but gets nothing while signals are unresolved.
    const second = await harness.worker();
    await second.register(`lost-b-${queue}`, [queue], 1);
    const held = await claimOne(second);
    expect(held.envelope!.pendingSignals).toEqual([]);
    const reconciled = await reconcile(job.id, SignalReconcileAction.REDELIVER);
    expect(reconciled.job?.unresolvedSignals).toBe(0);
    const redelivered = await second.expectOk('renewAttempt', { attempt: attemptOf(held), operationId: newOperationId() });
    expect(summary(redelivered.pendingSignals)).toEqual([
      { sequence: 4n, name: 's4', redelivered: true },
      { sequence: 5n, name: 's5', redelivered: true },
    ]);
    // Lost again before acknowledging: UNKNOWN again; this time the owner discards them.
    await second.crash();
    await harness.waitForStatus(job.id, 'QUEUED', 10_000);
    expect((await harness.admission.getJob({ jobId: job.id })).job?.unresolvedSignals).toBe(2);
    await reconcile(job.id, SignalReconcileAction.DISCARD);
    expect(await signalStates(job.id)).toMatchObject({ 4: 'DISCARDED', 5: 'DISCARDED' });
    expect((await send(job.id, 's6')).signal?.sequence).toBe(6n);
    const third = await harness.worker();
    await third.register(`lost-c-${queue}`, [queue], 1);
    const fresh = await claimOne(third);
    expect(summary(fresh.envelope!.pendingSignals)).toEqual([{ sequence: 6n, name: 's6', redelivered: false }]);

    // The journal tells the whole story, and `docket verify` re-checks it.
    const journal = await harness.journal(job.id);
    const story = journal
      .filter((event) => event.type.startsWith('signal.') || event.type === 'attempt.lost')
      .map((event) => [event.type, event.payload?.['from_sequence'] ?? event.payload?.['sequence'] ?? event.payload?.['to_sequence'] ?? '', event.payload?.['to_sequence'] ?? '']);
    expect(story).toEqual([
      ['signal.received', '1', ''],
      ['signal.received', '2', ''],
      ['signal.delivered', '1', '2'],
      ['signal.acknowledged', '2', '2'],
      ['signal.received', '3', ''],
      ['signal.received', '4', ''],
      ['signal.received', '5', ''],
      ['signal.delivered', '3', '5'],
      ['signal.acknowledged', '3', '3'],
      ['attempt.lost', '', ''],
      ['signal.unknown', '4', '5'],
      ['signal.redelivered', '4', '5'],
      ['signal.delivered', '4', '5'],
      ['attempt.lost', '', ''],
      ['signal.unknown', '4', '5'],
      ['signal.discarded', '4', '5'],
      ['signal.received', '6', ''],
      ['signal.delivered', '6', '6'],
    ]);
    const verified = await docketVerify(harness.cluster.events.url, await harness.cluster.tokenFor('signal-owner', 'user'), job.id);
    expect(verified.stdout).toMatch(/^intact: /);
    expect(verified.code).toBe(0);
  });

  it('an outcome that ends the attempt leaves unacknowledged signals UNKNOWN too', async () => {
    const { worker, queue } = await harness.workerOnFreshQueue('outcome');
    const job = await harness.submit({ queue });
    await send(job.id, 'late-news');
    const assignment = await claimOne(worker);
    await worker.expectOk('reportOutcome', { attempt: attemptOf(assignment), operationId: newOperationId(), outcome: { case: 'paused', value: {} } });
    expect(await signalStates(job.id)).toEqual({ 1: 'UNKNOWN' });
    const { job: paused } = await harness.admission.getJob({ jobId: job.id });
    expect([paused?.status, paused?.unresolvedSignals]).toEqual([JobStatus.PAUSED, 1]);
  });
});

import { Code } from '@connectrpc/connect';
import type { EffectRecord, EffectStateName } from '../effect-record.js';
import type { EffectTransition } from '@docket/contracts';

/** A refusal of the effect journal, as the service would send it (code and ErrorInfo reason). */
export class FakeRefusal extends Error {
  override readonly name = 'FakeRefusal';
  constructor(
    readonly code: Code,
    readonly reason: string,
  ) {
    super(`${Code[code]} ${reason}`);
  }
}

type MutableRecord = { -readonly [K in keyof EffectRecord]: EffectRecord[K] };

/**
 * One job's effect journal in memory, with the contract's rules
 * (execution_service.proto, effect.proto): a key bound to one kind and
 * digest (else IDEMPOTENCY_CONFLICT), every transition at the expected
 * revision (else REVISION_MISMATCH), PREPARED -> SIGNED -> COMMITTED,
 * PREPARED | SIGNED -> RECOVERABLE and back with resume, cancellation
 * before the commit as RECOVERABLE(CANCELLED_BEFORE_COMMIT) and after it
 * only noted. Shared by the effect runner's tests and the fake execution
 * service, so both drive the same state machine.
 */
export class FakeEffectStore {
  private readonly records: MutableRecord[] = [];
  /** Every transition applied, as `<effectId> <kind>` (`begin`, `signed`, ...), in order. */
  readonly history: string[] = [];
  private next = 0;

  /** BeginEffect: the record bound to `key`, created PREPARED when there is none. */
  begin(kind: string, key: string, inputDigest: string, attemptId: string): { record: EffectRecord; created: boolean } {
    const found = this.records.find((record) => record.key === key);
    if (found) {
      if (found.kind !== kind || found.inputDigest !== inputDigest) throw new FakeRefusal(Code.AlreadyExists, 'IDEMPOTENCY_CONFLICT');
      return { record: snapshot(found), created: false };
    }
    const now = new Date();
    const record: MutableRecord = {
      effectId: `eff_${String(++this.next).padStart(8, '0')}`,
      kind,
      state: 'PREPARED',
      revision: 1n,
      key,
      inputDigest,
      externalId: undefined,
      recovery: undefined,
      cancellation: 'NOT_REQUESTED',
      attemptId,
      createdAt: now,
      updatedAt: now,
      committedAt: undefined,
    };
    this.records.push(record);
    this.history.push(`${record.effectId} begin`);
    return { record: snapshot(record), created: true };
  }

  /** AdvanceEffect. */
  advance(effectId: string, expectedRevision: bigint, transition: EffectTransition, attemptId: string): EffectRecord {
    const record = this.records.find((candidate) => candidate.effectId === effectId);
    if (!record) throw new FakeRefusal(Code.NotFound, 'NOT_FOUND');
    if (record.revision !== expectedRevision) throw new FakeRefusal(Code.Aborted, 'REVISION_MISMATCH');
    const beforeCommit = record.state === 'PREPARED' || record.state === 'SIGNED';
    const illegal = (): never => {
      throw new FakeRefusal(Code.FailedPrecondition, 'ILLEGAL_TRANSITION');
    };
    switch (transition.kind) {
      case 'signed':
        if (record.state !== 'PREPARED') illegal();
        if (transition.externalId.length < 1 || transition.externalId.length > 256) throw new FakeRefusal(Code.InvalidArgument, 'INVALID_FIELD');
        record.state = 'SIGNED';
        record.externalId = transition.externalId;
        break;
      case 'committed':
        if (record.state !== 'SIGNED') illegal();
        if (transition.externalId !== record.externalId) throw new FakeRefusal(Code.InvalidArgument, 'INVALID_FIELD');
        record.state = 'COMMITTED';
        record.committedAt = new Date();
        break;
      case 'recoverable':
        if (!beforeCommit) illegal();
        record.recovery = {
          point: record.state as 'PREPARED' | 'SIGNED',
          reason: transition.reason,
          attempt: (this.recoveries.get(effectId) ?? 0) + 1,
          retryNotBefore: transition.retryNotBefore,
          attemptId,
          recordedAt: new Date(),
        };
        this.recoveries.set(effectId, record.recovery.attempt);
        record.state = 'RECOVERABLE';
        break;
      case 'resume':
        if (record.state !== 'RECOVERABLE' || !record.recovery) illegal();
        record.state = record.recovery!.point as EffectStateName;
        record.recovery = undefined;
        record.cancellation = 'NOT_REQUESTED';
        break;
      case 'cancelled':
        if (record.state === 'COMMITTED') {
          record.cancellation = 'OBSERVED_AFTER_COMMIT';
        } else if (beforeCommit) {
          record.recovery = {
            point: record.state as 'PREPARED' | 'SIGNED',
            reason: 'CANCELLED_BEFORE_COMMIT',
            attempt: (this.recoveries.get(effectId) ?? 0) + 1,
            retryNotBefore: undefined,
            attemptId,
            recordedAt: new Date(),
          };
          this.recoveries.set(effectId, record.recovery.attempt);
          record.state = 'RECOVERABLE';
          record.cancellation = 'CANCELLED_BEFORE_COMMIT';
        } else {
          illegal();
        }
        break;
    }
    record.revision += 1n;
    record.updatedAt = new Date();
    this.history.push(`${record.effectId} ${transition.kind === 'recoverable' ? `recoverable:${transition.reason}` : transition.kind}`);
    return snapshot(record);
  }

  /** ListRecoverableEffects: every record not COMMITTED, oldest first. */
  unfinished(limit: number): EffectRecord[] {
    return this.records.filter((record) => record.state !== 'COMMITTED').slice(0, limit).map(snapshot);
  }

  /** The record bound to `key`, as it is now. */
  byKey(key: string): EffectRecord | undefined {
    const record = this.records.find((candidate) => candidate.key === key);
    return record ? snapshot(record) : undefined;
  }

  private readonly recoveries = new Map<string, number>();
}

function snapshot(record: MutableRecord): EffectRecord {
  return Object.freeze({ ...record, recovery: record.recovery ? Object.freeze({ ...record.recovery }) : undefined });
}

import { describe, expect, it } from 'vitest';
import {
  DocketError,
  ERROR_DOMAIN,
  ERROR_REASONS,
  ERROR_REASON_CODES,
  GRPC_CODE,
  invalidField,
  isDocketError,
  isErrorReason,
  limitExceeded,
  mayHaveSucceeded,
  notFound,
} from './errors.js';

describe('ERROR_REASON_CODES', () => {
  it('maps exactly the SPEC vocabulary, each reason to one gRPC code', () => {
    expect(ERROR_DOMAIN).toBe('docket');
    expect(ERROR_REASON_CODES).toStrictEqual({
      INVALID_FIELD: 3,
      LIMIT_EXCEEDED: 3,
      BATCH_TOO_LARGE: 3,
      CURSOR_INVALID: 3,
      CURSOR_EXPIRED: 3,
      IDEMPOTENCY_CONFLICT: 6,
      APPROVAL_SPENT: 6,
      NOT_FOUND: 5,
      ILLEGAL_TRANSITION: 9,
      STALE_INCARNATION: 9,
      STALE_AUTHORITY: 9,
      OPERATION_MISMATCH: 9,
      SIGNALS_UNRESOLVED: 9,
      PARENT_ITEM_FAILED: 9,
      REVISION_MISMATCH: 10,
      CURSOR_BEYOND_LATEST: 11,
      JOURNAL_CORRUPT: 15,
      UNAUTHENTICATED: 16,
      PERMISSION_DENIED: 7,
      DEADLINE_EXCEEDED: 4,
      UNAVAILABLE: 14,
      DATABASE_ROLLED_BACK: 14,
      UNIMPLEMENTED: 12,
      INTERNAL: 13,
      CANCELLED: 1,
    });
    expect(ERROR_REASONS).toStrictEqual(Object.keys(ERROR_REASON_CODES));
    expect(Object.isFrozen(ERROR_REASON_CODES)).toBe(true);
  });

  it('uses the gRPC numbering of the code names', () => {
    expect(GRPC_CODE).toMatchObject({ OK: 0, UNKNOWN: 2, RESOURCE_EXHAUSTED: 8, DATA_LOSS: 15, UNAUTHENTICATED: 16 });
    expect(new Set(Object.values(GRPC_CODE))).toStrictEqual(new Set(Array.from({ length: 17 }, (_, i) => i)));
  });
});

describe('isErrorReason', () => {
  it('accepts every reason and nothing else', () => {
    for (const reason of ERROR_REASONS) expect(isErrorReason(reason)).toBe(true);
    for (const other of ['toString', '__proto__', 'constructor', 'invalid_field', 'OK', '', 3, null, undefined]) {
      expect(isErrorReason(other)).toBe(false);
    }
  });
});

describe('DocketError', () => {
  it('derives the gRPC code from the reason and freezes copies of its details', () => {
    const metadata = { from: 'QUEUED' };
    const fieldViolations = [{ field: 'queue', description: 'must be set' }];
    const error = new DocketError('REVISION_MISMATCH', 'revision is 4', { metadata, fieldViolations });
    metadata.from = 'changed';
    fieldViolations.push({ field: 'late', description: 'added later' });

    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('DocketError');
    expect(error.message).toBe('revision is 4');
    expect(error.reason).toBe('REVISION_MISMATCH');
    expect(error.grpcCode).toBe(10);
    expect(error.metadata).toStrictEqual({ from: 'QUEUED' });
    expect(error.fieldViolations).toStrictEqual([{ field: 'queue', description: 'must be set' }]);
    expect(Object.isFrozen(error.metadata)).toBe(true);
    expect(Object.isFrozen(error.fieldViolations)).toBe(true);
    expect(Object.isFrozen(error.fieldViolations[0])).toBe(true);
    expect(String(error)).toBe('DocketError: revision is 4');
  });

  it('defaults to no metadata and no violations', () => {
    const error = new DocketError('INTERNAL', 'internal error');
    expect(error.grpcCode).toBe(13);
    expect(error.metadata).toStrictEqual({});
    expect(error.fieldViolations).toStrictEqual([]);
  });
});

describe('isDocketError', () => {
  it('recognises errors by name and reason, also from another copy of the package', () => {
    class ForeignDocketError extends Error {
      override readonly name = 'DocketError';
      readonly reason = 'NOT_FOUND';
    }
    expect(isDocketError(notFound('job'))).toBe(true);
    expect(isDocketError(new ForeignDocketError('job not found'))).toBe(true);
  });

  it('rejects everything else', () => {
    const renamed = Object.assign(new Error('x'), { name: 'DocketError', reason: 'NO_SUCH_REASON' });
    for (const other of [new Error('x'), renamed, { name: 'DocketError' }, null, undefined, 'DocketError']) {
      expect(isDocketError(other)).toBe(false);
    }
  });
});

describe('factories', () => {
  it('invalidField carries one field violation', () => {
    const error = invalidField('queue', 'must match ^[a-z0-9][a-z0-9._-]{0,127}$');
    expect(error.reason).toBe('INVALID_FIELD');
    expect(error.grpcCode).toBe(GRPC_CODE.INVALID_ARGUMENT);
    expect(error.message).toBe('invalid queue');
    expect(error.fieldViolations).toStrictEqual([
      { field: 'queue', description: 'must match ^[a-z0-9][a-z0-9._-]{0,127}$' },
    ]);
  });

  it('limitExceeded names the limit and its value', () => {
    const bare = limitExceeded('eventBatch');
    expect(bare.reason).toBe('LIMIT_EXCEEDED');
    expect(bare.grpcCode).toBe(3);
    expect(bare.metadata).toStrictEqual({ limit: 'eventBatch', max: '64' });
    expect(bare.fieldViolations).toStrictEqual([]);

    const onField = limitExceeded('eventPayloadBytes', 'events[3].payload');
    expect(onField.metadata).toStrictEqual({ limit: 'eventPayloadBytes', max: '65536' });
    expect(onField.message).toBe('events[3].payload exceeds the eventPayloadBytes limit of 65536');
    expect(onField.fieldViolations).toStrictEqual([
      {
        field: 'events[3].payload',
        description: 'exceeds the eventPayloadBytes limit of 65536',
        reason: 'LIMIT_EXCEEDED',
      },
    ]);
  });

  it('notFound says nothing but the kind of thing', () => {
    const error = notFound('job');
    expect(error.reason).toBe('NOT_FOUND');
    expect(error.grpcCode).toBe(5);
    expect(error.message).toBe('job not found');
    expect(error.metadata).toStrictEqual({});
    expect(error.fieldViolations).toStrictEqual([]);
  });
});

describe('mayHaveSucceeded', () => {
  it('is false only for refusals decided before any write', () => {
    const possiblyApplied = Object.values(GRPC_CODE).filter(mayHaveSucceeded).sort((a, b) => a - b);
    expect(possiblyApplied).toStrictEqual([
      GRPC_CODE.OK,
      GRPC_CODE.CANCELLED,
      GRPC_CODE.UNKNOWN,
      GRPC_CODE.DEADLINE_EXCEEDED,
      GRPC_CODE.RESOURCE_EXHAUSTED,
      GRPC_CODE.INTERNAL,
      GRPC_CODE.UNAVAILABLE,
    ]);
  });

  it('treats unknown codes as possibly applied', () => {
    expect(mayHaveSucceeded(17)).toBe(true);
    expect(mayHaveSucceeded(-1)).toBe(true);
  });

  it('agrees with the reason table: a Docket reason may have succeeded only if the work may have run', () => {
    const possiblyApplied = ERROR_REASONS.filter((reason) => mayHaveSucceeded(ERROR_REASON_CODES[reason]));
    // DATABASE_ROLLED_BACK travels as UNAVAILABLE: callers retry it with the same key, which succeeds once the rollback is accepted.
    expect(possiblyApplied).toStrictEqual(['DEADLINE_EXCEEDED', 'UNAVAILABLE', 'DATABASE_ROLLED_BACK', 'INTERNAL', 'CANCELLED']);
  });
});

import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { DocketError, invalidField } from '@docket/contracts';
import { errorInfoOf, fieldViolationsOf, toConnectError } from './error-mapping.js';
import { failureOfStatus } from '@docket/client-kit';
import { statusOfFailure } from './item-status.js';
import { createLogger } from './logger.js';

const lines: string[] = [];
const logger = createLogger('item-status-test', (line) => lines.push(line));

describe('a batched item\u2019s error', () => {
  it.each([
    { name: 'a conflict', error: new DocketError('IDEMPOTENCY_CONFLICT', 'the idempotency key is already bound to a different request') },
    { name: 'a field violation', error: invalidField('idempotency_key', 'must be 16 to 128 characters') },
    { name: 'stale authority', error: new DocketError('STALE_AUTHORITY', 'the attempt is no longer the job\u2019s current authority') },
    { name: 'a corrupt journal with metadata', error: new DocketError('JOURNAL_CORRUPT', 'the job journal failed verification', { metadata: { job_id: 'job_x', sequence: '3' } }) },
    { name: 'an upstream error passed through', error: toConnectError(new DocketError('NOT_FOUND', 'not found'), logger) },
  ])('arrives as the unary call would have failed: $name', ({ error }) => {
    const unary = toConnectError(error, logger);
    const batched = toConnectError(failureOfStatus(statusOfFailure(error, logger)), logger);
    expect(batched.code).toBe(unary.code);
    expect(batched.rawMessage).toBe(unary.rawMessage);
    expect(errorInfoOf(batched)).toEqual(errorInfoOf(unary));
    expect(fieldViolationsOf(batched)).toEqual(fieldViolationsOf(unary));
  });

  it('never carries what an unexpected error says', () => {
    const status = statusOfFailure(new Error('relation "jobs" at /srv/secret.sql line 3'), logger);
    expect(status.code).toBe(Code.Internal);
    expect(JSON.stringify({ ...status, details: status.details.map((detail) => Buffer.from(detail.value).toString('latin1')) })).not.toMatch(/jobs|secret|sql/);
    expect(failureOfStatus(status)).toBeInstanceOf(ConnectError);
  });
});

import { describe, expect, it } from 'vitest';
import { DocketError, invalidField } from '@docket/contracts';
import { journalCorrupt } from './journal-verification.js';
import { inboxDisagrees } from '../signals/signal-inbox.js';
import { quarantineCause } from './job-quarantine.js';

/** A pg error as node-postgres raises it: a message and a SQLSTATE `code`. */
function pgError(code: string): Error {
  return Object.assign(new Error('database said no'), { code });
}

describe('quarantineCause', () => {
  it('names the class of failures that belong to the job itself', () => {
    expect(quarantineCause(journalCorrupt('job_x', 3n))).toBe('JOURNAL_CORRUPT');
    expect(quarantineCause(inboxDisagrees())).toBe('INTERNAL');
    expect(quarantineCause(new DocketError('ILLEGAL_TRANSITION', 'no'))).toBe('ILLEGAL_TRANSITION');
    expect(quarantineCause(invalidField('payload', 'too large'))).toBe('INVALID_FIELD');
    expect(quarantineCause(pgError('22P02'))).toBe('SQLSTATE_22P02');
    expect(quarantineCause(pgError('23514'))).toBe('SQLSTATE_23514');
    expect(quarantineCause(new SyntaxError('Unexpected token'))).toBe('SyntaxError');
    expect(quarantineCause(new RangeError('Invalid time value'))).toBe('RangeError');
  });

  it('leaves failures of the system to fail the step, so a healthy job is never quarantined for an outage', () => {
    for (const code of ['40001', '40P01', '57014', '57P01', '57P03', '53300', '08006', 'XX000']) expect(quarantineCause(pgError(code))).toBeUndefined();
    for (const code of ['ECONNREFUSED', 'ECONNRESET']) expect(quarantineCause(Object.assign(new Error('socket'), { code }))).toBeUndefined();
    expect(quarantineCause(new Error('Connection terminated unexpectedly'))).toBeUndefined();
    expect(quarantineCause(new Error('timeout exceeded when trying to connect'))).toBeUndefined();
    expect(quarantineCause(new DocketError('UNAVAILABLE', 'later'))).toBeUndefined();
    expect(quarantineCause(new DocketError('DEADLINE_EXCEEDED', 'later'))).toBeUndefined();
    expect(quarantineCause(new TypeError('x is undefined'))).toBeUndefined();
    expect(quarantineCause('not an error')).toBeUndefined();
  });

  it('never carries the message', () => {
    const cause = quarantineCause(Object.assign(new Error('select * from jobs where secret = 1'), { code: '22003' }));
    expect(cause).toBe('SQLSTATE_22003');
  });
});

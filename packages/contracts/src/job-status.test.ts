import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  JOB_STATUSES,
  LEGAL_EDGES,
  TERMINAL_STATUSES,
  assertLegalTransition,
  isJobStatusName,
  isLegalTransition,
  isTerminal,
  type JobStatusName,
} from './job-status.js';

const status = fc.constantFrom(...JOB_STATUSES);

describe('the SPEC §4 status machine', () => {
  it('has exactly the SPEC statuses, edges and terminal set', () => {
    expect(JOB_STATUSES).toStrictEqual([
      'WAITING',
      'QUEUED',
      'RUNNING',
      'PAUSED',
      'RETRY_WAIT',
      'CANCELLING',
      'SUCCEEDED',
      'FAILED',
      'CANCELLED',
      'INTERRUPTED',
    ]);
    expect([...TERMINAL_STATUSES].sort()).toStrictEqual(['CANCELLED', 'FAILED', 'INTERRUPTED', 'SUCCEEDED']);
    expect(LEGAL_EDGES).toStrictEqual({
      WAITING: ['QUEUED', 'PAUSED', 'CANCELLED'],
      QUEUED: ['RUNNING', 'PAUSED', 'CANCELLED', 'FAILED'],
      RUNNING: ['PAUSED', 'SUCCEEDED', 'FAILED', 'RETRY_WAIT', 'CANCELLING', 'INTERRUPTED'],
      PAUSED: ['QUEUED', 'WAITING', 'CANCELLED', 'FAILED'],
      RETRY_WAIT: ['QUEUED', 'PAUSED', 'CANCELLED', 'FAILED'],
      CANCELLING: ['CANCELLED', 'SUCCEEDED', 'FAILED'],
      SUCCEEDED: [],
      FAILED: [],
      CANCELLED: [],
      INTERRUPTED: [],
    });
  });

  it('answers isLegalTransition from the table for all 100 pairs', () => {
    let legal = 0;
    for (const from of JOB_STATUSES) {
      for (const to of JOB_STATUSES) {
        expect(isLegalTransition(from, to)).toBe(LEGAL_EDGES[from].includes(to));
        if (isLegalTransition(from, to)) legal++;
      }
    }
    expect(legal).toBe(3 + 4 + 6 + 4 + 4 + 3);
  });

  it('cannot be edited at run time', () => {
    expect(Object.isFrozen(LEGAL_EDGES)).toBe(true);
    for (const from of JOB_STATUSES) expect(Object.isFrozen(LEGAL_EDGES[from])).toBe(true);
    expect(Object.isFrozen(JOB_STATUSES)).toBe(true);
  });

  it('gives terminal statuses no out-edges and no status a self-edge', () => {
    fc.assert(
      fc.property(status, status, (from, to) => {
        if (isTerminal(from)) expect(isLegalTransition(from, to)).toBe(false);
        if (from === to) expect(isLegalTransition(from, to)).toBe(false);
      }),
    );
  });

  it('lets every non-terminal status reach a terminal one', () => {
    for (const start of JOB_STATUSES.filter((s) => !isTerminal(s))) {
      const seen = new Set<JobStatusName>([start]);
      const frontier: JobStatusName[] = [start];
      for (let next = frontier.pop(); next !== undefined; next = frontier.pop()) {
        for (const to of LEGAL_EDGES[next]) {
          if (!seen.has(to)) {
            seen.add(to);
            frontier.push(to);
          }
        }
      }
      expect([...seen].some(isTerminal), start).toBe(true);
    }
  });

  it('never leaves a terminal status on any random walk', () => {
    fc.assert(
      fc.property(status, fc.array(status, { maxLength: 40 }), (start, attempts) => {
        let current = start;
        let terminalAt: JobStatusName | undefined = isTerminal(current) ? current : undefined;
        for (const to of attempts) {
          if (!isLegalTransition(current, to)) {
            expect(() => assertLegalTransition(current, to)).toThrow();
            continue;
          }
          expect(terminalAt).toBeUndefined();
          current = to;
          if (isTerminal(current)) terminalAt = current;
        }
        if (terminalAt !== undefined) expect(current).toBe(terminalAt);
      }),
    );
  });
});

describe('assertLegalTransition', () => {
  it('passes legal edges', () => {
    expect(() => assertLegalTransition('RUNNING', 'CANCELLING')).not.toThrow();
  });

  it('refuses illegal edges with FAILED_PRECONDITION / ILLEGAL_TRANSITION', () => {
    expect(() => assertLegalTransition('SUCCEEDED', 'QUEUED')).toThrow(
      expect.objectContaining({
        name: 'DocketError',
        reason: 'ILLEGAL_TRANSITION',
        grpcCode: 9,
        metadata: { from: 'SUCCEEDED', to: 'QUEUED' },
        message: 'a SUCCEEDED job cannot become QUEUED',
      }),
    );
  });
});

describe('isJobStatusName', () => {
  it('accepts exactly the statuses', () => {
    for (const s of JOB_STATUSES) expect(isJobStatusName(s)).toBe(true);
    for (const other of ['queued', 'JOB_STATUS_QUEUED', 'UNSPECIFIED', 'toString', '', 0, null]) {
      expect(isJobStatusName(other)).toBe(false);
    }
  });
});

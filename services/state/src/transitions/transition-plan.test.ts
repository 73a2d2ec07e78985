import { describe, expect, it } from 'vitest';
import { GENESIS_HASH, verifyChainSegment } from '@docket/contracts';
import { jobRow, queuedJobRow } from '../testing/job-row.js';
import { checkStoredHead, planTransition } from './transition-plan.js';

const now = new Date('2026-12-01T10:00:10.000Z');

describe('planTransition', () => {
  it('chains the events after the head, bumps the revision and moves the head', () => {
    const job = jobRow();
    const planned = planTransition(job, { toStatus: 'SUCCEEDED', events: [{ type: 'worker.a', payload: { n: 1 } }, { type: 'job.succeeded', payload: {} }] }, now);
    expect(planned.eventRows.map((row) => [row.sequence, row.previous_hash])).toEqual([
      [3n, job.head_hash],
      [4n, planned.eventRows[0]?.hash],
    ]);
    expect(planned).toMatchObject({ firstSequence: 3n, lastSequence: 4n });
    expect(planned.job).toMatchObject({ status: 'SUCCEEDED', revision: 3n, event_count: 4n, head_hash: planned.eventRows[1]?.hash, updated_at: now });
    const verdict = verifyChainSegment(
      planned.eventRows.map((row) => ({
        jobId: row.job_id,
        requestDigest: job.request_digest,
        sequence: BigInt(row.sequence),
        previousHash: row.previous_hash,
        type: row.type,
        payload: JSON.parse(row.payload as string),
        occurredAt: row.occurred_at,
        hash: row.hash,
      })),
      { jobId: job.id, requestDigest: job.request_digest, previousHash: job.head_hash, previousSequence: 2n },
    );
    expect(verdict.ok).toBe(true);
  });

  it.each([
    { name: 'an illegal edge', job: queuedJobRow(), transition: { toStatus: 'SUCCEEDED' as const, events: [{ type: 'job.succeeded', payload: {} }] }, reason: 'ILLEGAL_TRANSITION' },
    { name: 'too many events', job: jobRow(), transition: { events: Array.from({ length: 65 }, () => ({ type: 'worker.x', payload: {} })) }, reason: 'LIMIT_EXCEEDED' },
  ])('refuses $name before anything is planned', ({ job, transition, reason }) => {
    expect(() => planTransition(job, transition, now)).toThrow(expect.objectContaining({ reason }));
  });
});

describe('checkStoredHead', () => {
  const job = jobRow();
  it.each([
    { name: 'the head the row records', last: { sequence: 2n, hash: job.head_hash }, corrupt: false },
    { name: 'no event at all', last: undefined, corrupt: true },
    { name: 'a later event than the row knows', last: { sequence: 3n, hash: job.head_hash }, corrupt: true },
    { name: 'another hash', last: { sequence: 2n, hash: GENESIS_HASH }, corrupt: true },
  ])('$name', ({ last, corrupt }) => {
    if (corrupt) expect(() => checkStoredHead(job, last)).toThrow(expect.objectContaining({ reason: 'JOURNAL_CORRUPT' }));
    else expect(() => checkStoredHead(job, last)).not.toThrow();
  });
});

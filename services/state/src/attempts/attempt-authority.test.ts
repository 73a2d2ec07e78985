import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { AttemptRefSchema } from '@docket/proto/docket/common/v1/attempt_pb.js';
import type { IncarnationRow } from '../db/queries/workers.js';
import { jobRow } from '../testing/job-row.js';
import { checkAuthority } from './attempt-authority.js';

const now = new Date('2026-12-01T10:00:10.000Z');
const incarnation: IncarnationRow = {
  id: 'wkr_aaaaaaaaaaaaaaaaaaaaaaaaaa',
  subject: 'worker-1',
  name: 'w',
  generation: 1n,
  queues: ['email'],
  max_concurrency: 4,
  registered_at: now,
  superseded_at: null,
  last_seen_at: now,
};
const ref = create(AttemptRefSchema, { attemptId: 'att_aaaaaaaaaaaaaaaaaaaaaaaaaa', fence: 1n, workerIncarnation: incarnation.id });

describe('checkAuthority', () => {
  it.each([
    { name: 'the current authority with a live lease', incarnation, ref, job: jobRow(), refused: undefined },
    { name: 'a CANCELLING job still answers its attempt', incarnation, ref, job: jobRow({ status: 'CANCELLING' }), refused: undefined },
    { name: 'an unknown incarnation', incarnation: undefined, ref, job: jobRow(), refused: 'STALE_INCARNATION' },
    { name: 'a superseded incarnation', incarnation: { ...incarnation, superseded_at: now }, ref, job: jobRow(), refused: 'STALE_INCARNATION' },
    { name: 'no attempt named', incarnation, ref: undefined, job: jobRow(), refused: 'STALE_AUTHORITY' },
    { name: 'the attempt of another incarnation', incarnation, ref: { ...ref, workerIncarnation: 'wkr_bbbbbbbbbbbbbbbbbbbbbbbbbb' }, job: jobRow(), refused: 'STALE_AUTHORITY' },
    { name: 'a job that is not locked (not the attempt\u2019s)', incarnation, ref, job: undefined, refused: 'STALE_AUTHORITY' },
    { name: 'an older fence', incarnation, ref, job: jobRow({ fence: 2n }), refused: 'STALE_AUTHORITY' },
    { name: 'another attempt', incarnation, ref, job: jobRow({ current_attempt_id: 'att_bbbbbbbbbbbbbbbbbbbbbbbbbb' }), refused: 'STALE_AUTHORITY' },
    { name: 'a job that is no longer running', incarnation, ref, job: jobRow({ status: 'SUCCEEDED' }), refused: 'STALE_AUTHORITY' },
    { name: 'a lease that expired at this very millisecond', incarnation, ref, job: jobRow({ lease_expires_at: now }), refused: 'STALE_AUTHORITY' },
    { name: 'a settled lease', incarnation, ref, job: jobRow({ lease_expires_at: null }), refused: 'STALE_AUTHORITY' },
  ])('$name', ({ incarnation: found, ref: named, job, refused }) => {
    if (refused === undefined) {
      expect(checkAuthority(found, named, job, now)).toBe(job);
    } else {
      expect(() => checkAuthority(found, named, job, now)).toThrow(expect.objectContaining({ reason: refused }));
    }
  });
});

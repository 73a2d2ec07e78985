import { describe, expect, it } from 'vitest';
import { parseAnnouncement } from './change-listener.js';
import { MAX_ANNOUNCEMENT_BYTES, RESYNC_ANNOUNCEMENT, announcementOf } from './queries/job-changes.js';

const change = (index: number) => ({ jobId: `job_${String(index).padStart(26, '0')}`, latestSequence: BigInt(index + 1), status: 'QUEUED', queue: 'email' });

describe('job change announcements', () => {
  it.each([
    { name: 'one change', changes: [change(0)] },
    { name: 'a batch of changes', changes: Array.from({ length: 50 }, (_, index) => change(index)) },
    { name: 'a progress report', changes: [{ ...change(7), status: 'RUNNING', progress: { completed_units: '3', total_units: '9', message: 'm', updated_at: '2026-12-01T00:00:00.000Z' } }] },
  ])('round-trips $name through a NOTIFY payload', ({ changes }) => {
    const payload = announcementOf(changes);
    expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(MAX_ANNOUNCEMENT_BYTES);
    expect(parseAnnouncement(payload)).toEqual(changes);
  });

  it('turns a batch too large for one NOTIFY into a resync announcement', () => {
    const payload = announcementOf(Array.from({ length: 400 }, (_, index) => change(index)));
    expect(payload).toBe(RESYNC_ANNOUNCEMENT);
    expect(parseAnnouncement(payload)).toBeUndefined();
  });

  it.each(['', '{}', '{"jobs":[["job_1"]]}', '{"jobs":[[1,"1","QUEUED","q"]]}', 'not json'])('refuses the malformed payload %j', (payload) => {
    expect(() => parseAnnouncement(payload)).toThrow();
  });
});

import { describe, expect, it } from 'vitest';
import { AcknowledgedWatermark } from './acknowledged-watermark.js';

const LINEAGE = { systemIdentifier: '7312345678901234567', timeline: 1 };

describe('AcknowledgedWatermark', () => {
  it('keeps the highest acknowledged position, and the highest no synchronous standby confirmed', () => {
    const mark = new AcknowledgedWatermark();
    mark.startAt(LINEAGE, 100n);
    mark.recordCommit(300n, false, ['job_a']);
    mark.recordCommit(200n, false, ['job_b']);
    mark.recordCommit(500n, true, ['job_c']);
    expect(mark.acknowledgedLsn).toBe(500n);
    expect(mark.unconfirmedLsn).toBe(300n);
    // A confirmed commit is on the standby: its jobs are not in the window.
    expect(mark.windowAbove(0n).entries.flatMap((entry) => entry.jobIds).sort()).toEqual(['job_a', 'job_b']);
  });

  it('bounds an acknowledged commit by the first reading sent after it, and says when one is not bounded yet', () => {
    const mark = new AcknowledgedWatermark();
    mark.startAt(LINEAGE, 0n);
    mark.recordAcknowledged(10, false, ['job_a']);
    mark.recordAcknowledged(20, true, ['job_b']);
    expect(mark.unboundedUnconfirmed).toBe(true);
    expect(mark.pendingJobIds).toEqual(['job_a', 'job_b']);
    // A reading sent before the acknowledgement bounds nothing of it.
    mark.recordReading(5, 100n);
    expect(mark.unconfirmedLsn).toBe(0n);
    mark.recordReading(15, 200n);
    expect(mark.unconfirmedLsn).toBe(200n);
    expect(mark.unboundedUnconfirmed).toBe(false);
    expect(mark.windowAbove(0n).entries).toEqual([{ lsn: 200n, jobIds: ['job_a'] }]);
    // The confirmed one waits for its reading too, then raises only the overall mark.
    expect(mark.pendingJobIds).toEqual(['job_b']);
    mark.recordReading(25, 300n);
    expect(mark.pendingJobIds).toEqual([]);
    expect(mark.acknowledgedLsn).toBe(300n);
    expect(mark.unconfirmedLsn).toBe(200n);
  });

  it('lets jobs leave the window once every standby has flushed past them', () => {
    const mark = new AcknowledgedWatermark();
    mark.startAt(LINEAGE, 0n);
    mark.recordCommit(100n, false, ['job_a']);
    mark.recordCommit(200n, false, ['job_b']);
    mark.recordStandbyFlush(150n);
    expect(mark.windowAbove(0n).entries).toEqual([{ lsn: 200n, jobIds: ['job_b'] }]);
    // A commit below the standby's position is replicated already.
    mark.recordCommit(120n, false, ['job_c']);
    expect(mark.windowAbove(0n).entries.map((entry) => entry.lsn)).toEqual([200n]);
    // The standby's position never goes back.
    mark.recordStandbyFlush(100n);
    expect(mark.standbyFlushLsn).toBe(150n);
  });

  it('is bounded: the lowest entries are dropped, and it says up to where', () => {
    const mark = new AcknowledgedWatermark(4);
    mark.startAt(LINEAGE, 0n);
    mark.recordCommit(100n, false, ['job_1', 'job_2']);
    mark.recordCommit(300n, false, ['job_5']);
    mark.recordCommit(200n, false, ['job_3', 'job_4']);
    mark.recordCommit(400n, false, ['job_6']);
    const window = mark.windowAbove(0n);
    expect(window.entries.flatMap((entry) => entry.jobIds)).toEqual(['job_5', 'job_3', 'job_4', 'job_6']);
    expect(window.truncatedAt).toBe(100n);
    // Dropped entries below a fork point do not matter to it.
    expect(mark.windowAbove(100n).truncatedAt).toBeUndefined();
    // Nor once the standby has them.
    mark.recordStandbyFlush(150n);
    expect(mark.windowAbove(0n).truncatedAt).toBeUndefined();
  });

  it('starts afresh on an accepted rollback, and follows a timeline without forgetting positions', () => {
    const mark = new AcknowledgedWatermark();
    mark.startAt(LINEAGE, 0n);
    mark.recordCommit(300n, false, ['job_a']);
    mark.followTimeline({ ...LINEAGE, timeline: 2 });
    expect(mark.lineage).toEqual({ ...LINEAGE, timeline: 2 });
    expect(mark.unconfirmedLsn).toBe(300n);
    mark.startAt({ ...LINEAGE, timeline: 3 }, 250n);
    expect(mark.acknowledgedLsn).toBe(250n);
    expect(mark.unconfirmedLsn).toBe(0n);
    expect(mark.windowAbove(0n).entries).toEqual([]);
  });

  it('saves and restores everything it judges by, and counts its changes', () => {
    const mark = new AcknowledgedWatermark(3);
    expect(mark.snapshot()).toBeUndefined();
    mark.startAt(LINEAGE, 0x10n);
    mark.recordCommit(0x1_0000_0000n, false, ['job_a', 'job_b']);
    mark.recordCommit(0x1_0000_0010n, false, ['job_c', 'job_d']);
    mark.recordStandbyFlush(0x20n);
    const saved = mark.snapshot()!;
    expect(saved).toMatchObject({ version: 1, timeline: 1, acknowledgedLsn: '1/10', unconfirmedLsn: '1/10', standbyFlushLsn: '0/20', windowTruncatedAt: '1/0' });
    const restored = new AcknowledgedWatermark(3);
    restored.restore(JSON.parse(JSON.stringify(saved)));
    expect(restored.snapshot()).toEqual(saved);
    const before = restored.revision;
    restored.recordCommit(0x1_0000_0020n, true);
    expect(restored.revision).toBeGreaterThan(before);
    // Nothing new, nothing to save.
    const after = restored.revision;
    restored.recordCommit(0x10n, false);
    expect(restored.revision).toBe(after);
  });
});

import { describe, expect, it } from 'vitest';
import { judgeHistory, type RecordedHistory } from './rollback-verdict.js';

/*
 * When does a new primary's history lack a write this replica
 * acknowledged? Positions here are small numbers; the fork point is where
 * the new timeline left the recorded one.
 */

const SYSTEM = '7312345678901234567';
const recorded = (overrides: Partial<RecordedHistory> = {}): RecordedHistory => ({
  lineage: { systemIdentifier: SYSTEM, timeline: 1 },
  acknowledgedLsn: 1_000n,
  unconfirmedLsn: 1_000n,
  unboundedUnconfirmed: false,
  standbyFlushLsn: 900n,
  ...overrides,
});
const on = (timeline: number, systemIdentifier: string | null = SYSTEM) => ({ systemIdentifier, timeline });

describe('judgeHistory', () => {
  it('sees nothing on the same timeline at or past the acknowledged position', () => {
    expect(judgeHistory(recorded(), { lineage: on(1), position: 1_000n, history: undefined })).toEqual({ kind: 'unchanged' });
    expect(judgeHistory(recorded(), { lineage: on(1), position: 5_000n, history: undefined })).toEqual({ kind: 'unchanged' });
  });

  it('finds a rewind when the same timeline is behind what was acknowledged', () => {
    expect(judgeHistory(recorded(), { lineage: on(1), position: 999n, history: undefined })).toEqual({ kind: 'rolled-back', cause: 'rewound', forkLsn: 999n, forkSource: 'current_position' });
  });

  it('finds a lost write when the new timeline forked before an unconfirmed acknowledged position', () => {
    const history = [{ timeline: 1, switchpoint: 999n }];
    expect(judgeHistory(recorded(), { lineage: on(2), position: 2_000n, history })).toEqual({ kind: 'rolled-back', cause: 'timeline', forkLsn: 999n, forkSource: 'timeline_history' });
  });

  it('follows a new timeline that forked at or after everything acknowledged', () => {
    expect(judgeHistory(recorded(), { lineage: on(2), position: 2_000n, history: [{ timeline: 1, switchpoint: 1_000n }] })).toEqual({ kind: 'followed', forkLsn: 1_000n, forkSource: 'timeline_history' });
    // Several promotions: the line of the recorded timeline counts.
    const hops = [
      { timeline: 1, switchpoint: 1_500n },
      { timeline: 2, switchpoint: 800n },
    ];
    expect(judgeHistory(recorded(), { lineage: on(3), position: 2_000n, history: hops })).toMatchObject({ kind: 'followed', forkLsn: 1_500n });
  });

  it('counts a write acknowledged after the last position reading as beyond any fork point', () => {
    const history = [{ timeline: 1, switchpoint: 5_000n }];
    expect(judgeHistory(recorded({ unboundedUnconfirmed: true }), { lineage: on(2), position: 6_000n, history })).toEqual({ kind: 'rolled-back', cause: 'timeline', forkLsn: 5_000n, forkSource: 'timeline_history' });
    // It changes nothing on the same timeline.
    expect(judgeHistory(recorded({ unboundedUnconfirmed: true }), { lineage: on(1), position: 6_000n, history: undefined })).toEqual({ kind: 'unchanged' });
  });

  it('counts only writes no synchronous standby confirmed against a fork', () => {
    const history = [{ timeline: 1, switchpoint: 500n }];
    expect(judgeHistory(recorded({ unconfirmedLsn: 400n }), { lineage: on(2), position: 2_000n, history })).toMatchObject({ kind: 'followed' });
    expect(judgeHistory(recorded({ unconfirmedLsn: 0n }), { lineage: on(2), position: 2_000n, history: undefined })).toMatchObject({ kind: 'followed' });
  });

  it("falls back on the standby's last known position without a history that names the recorded timeline, and on 0 without that", () => {
    expect(judgeHistory(recorded(), { lineage: on(2), position: 2_000n, history: undefined })).toEqual({ kind: 'rolled-back', cause: 'timeline', forkLsn: 900n, forkSource: 'standby_position' });
    expect(judgeHistory(recorded(), { lineage: on(3), position: 2_000n, history: [{ timeline: 2, switchpoint: 5_000n }] })).toMatchObject({ kind: 'rolled-back', forkSource: 'standby_position' });
    expect(judgeHistory(recorded({ unconfirmedLsn: 900n }), { lineage: on(2), position: 2_000n, history: undefined })).toMatchObject({ kind: 'followed', forkSource: 'standby_position' });
    expect(judgeHistory(recorded({ standbyFlushLsn: undefined }), { lineage: on(2), position: 2_000n, history: undefined })).toEqual({ kind: 'rolled-back', cause: 'timeline', forkLsn: 0n, forkSource: 'unknown' });
  });

  it('finds another database system once anything was acknowledged, and judges by timeline when a system identifier is unreadable', () => {
    expect(judgeHistory(recorded(), { lineage: on(1, '7399999999999999999'), position: 5_000n, history: undefined })).toMatchObject({ kind: 'rolled-back', cause: 'replaced' });
    expect(judgeHistory(recorded({ acknowledgedLsn: 0n, unconfirmedLsn: 0n }), { lineage: on(1, '7399999999999999999'), position: 5_000n, history: undefined })).toMatchObject({ kind: 'followed' });
    expect(judgeHistory(recorded(), { lineage: on(1, null), position: 5_000n, history: undefined })).toEqual({ kind: 'unchanged' });
  });
});

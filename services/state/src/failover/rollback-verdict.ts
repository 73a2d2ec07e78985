import type { DatabaseLineage } from './acknowledged-watermark.js';
import { forkPointOf, type TimelineSwitch, type WalPosition } from './wal-position.js';

/** What the state replica recorded about the writes it acknowledged. */
export interface RecordedHistory {
  readonly lineage: DatabaseLineage;
  /** The highest position of any acknowledged write. */
  readonly acknowledgedLsn: WalPosition;
  /** The highest position of a write no synchronous standby confirmed. */
  readonly unconfirmedLsn: WalPosition;
  /** Whether such a write was acknowledged after the last position reading (its position unknown: beyond any fork point). */
  readonly unboundedUnconfirmed: boolean;
  /** The standby's last known flush position. */
  readonly standbyFlushLsn: WalPosition | undefined;
}

/** Where the primary is now. */
export interface ObservedHistory {
  readonly lineage: DatabaseLineage;
  /** Its WAL flush position now. */
  readonly position: WalPosition;
  /** Its timeline's history (undefined when it could not be read). */
  readonly history: readonly TimelineSwitch[] | undefined;
}

/** Why acknowledged writes are gone. */
export type RollbackCause =
  /** A standby was promoted (a new timeline) from a point before writes this replica acknowledged. */
  | 'timeline'
  /** Same timeline, but the database is behind a position this replica acknowledged (restored from a copy). */
  | 'rewound'
  /** Another database system (a different system identifier) now answers. */
  | 'replaced';

/** How the fork point is known. */
export type ForkSource = 'timeline_history' | 'standby_position' | 'current_position' | 'unknown';

/** The judgement of one observation. */
export type RollbackVerdict =
  | { readonly kind: 'unchanged' }
  /** A new timeline that kept every acknowledged write: follow it. */
  | { readonly kind: 'followed'; readonly forkLsn: WalPosition; readonly forkSource: ForkSource }
  | { readonly kind: 'rolled-back'; readonly cause: RollbackCause; readonly forkLsn: WalPosition; readonly forkSource: ForkSource };

/**
 * Decides whether the primary's history still holds what was acknowledged.
 *
 * - Another system identifier (both known): `replaced`, if anything was
 *   ever acknowledged.
 * - The same timeline: `rewound` if the primary is now behind the highest
 *   acknowledged position, else unchanged.
 * - Another timeline: the fork point is where the new timeline's history
 *   left the recorded one. Without a readable history that names it, it is
 *   taken, conservatively, as the standby's last known flush position (the
 *   promoted standby had at least that, perhaps more), and as 0 when that
 *   is unknown too. Writes that a synchronous standby confirmed were on
 *   the standby, so only unconfirmed ones count: if any lies beyond the
 *   fork point (`unconfirmedLsn > fork`, an upper bound, so a doubt counts
 *   as a loss), or was acknowledged after the last reading of a position
 *   (so its own is unknown), the verdict is `timeline`; otherwise the new
 *   timeline is followed.
 */
export function judgeHistory(recorded: RecordedHistory, observed: ObservedHistory): RollbackVerdict {
  const was = recorded.lineage;
  const now = observed.lineage;
  if (was.systemIdentifier !== null && now.systemIdentifier !== null && was.systemIdentifier !== now.systemIdentifier) {
    return recorded.acknowledgedLsn > 0n ? { kind: 'rolled-back', cause: 'replaced', forkLsn: 0n, forkSource: 'unknown' } : { kind: 'followed', forkLsn: 0n, forkSource: 'unknown' };
  }
  if (was.timeline === now.timeline) {
    return observed.position < recorded.acknowledgedLsn
      ? { kind: 'rolled-back', cause: 'rewound', forkLsn: observed.position, forkSource: 'current_position' }
      : { kind: 'unchanged' };
  }
  const fromHistory = observed.history && forkPointOf(observed.history, was.timeline);
  const [forkLsn, forkSource]: [WalPosition, ForkSource] =
    fromHistory !== undefined ? [fromHistory, 'timeline_history'] : recorded.standbyFlushLsn !== undefined ? [recorded.standbyFlushLsn, 'standby_position'] : [0n, 'unknown'];
  return recorded.unboundedUnconfirmed || recorded.unconfirmedLsn > forkLsn ? { kind: 'rolled-back', cause: 'timeline', forkLsn, forkSource } : { kind: 'followed', forkLsn, forkSource };
}

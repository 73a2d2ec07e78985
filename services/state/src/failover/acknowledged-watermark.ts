import { formatWalPosition, parseWalPosition, type WalPosition } from './wal-position.js';

/** Which database history the acknowledged positions belong to. */
export interface DatabaseLineage {
  /** `pg_control_system().system_identifier` (decimal), or null when the role may not read it. */
  readonly systemIdentifier: string | null;
  readonly timeline: number;
}

/** Acknowledged job ids committed at or below one WAL position. */
export interface WindowEntry {
  readonly lsn: WalPosition;
  readonly jobIds: readonly string[];
}

/**
 * How many acknowledged job ids the window keeps: beyond it the oldest
 * entries are dropped, and the report says that ids below
 * `windowTruncatedAt` were not kept. At 26-character ids the watermark file
 * stays under half a megabyte.
 */
export const WINDOW_JOB_IDS_MAX = 10_000;

/** The watermark as the watermark file stores it (version 1): positions as `X/Y` text. */
export interface WatermarkSnapshot {
  readonly version: 1;
  readonly systemIdentifier: string | null;
  readonly timeline: number;
  /** The highest position of any acknowledged write. */
  readonly acknowledgedLsn: string;
  /** The highest position of a write acknowledged without a synchronous standby's confirmation. */
  readonly unconfirmedLsn: string;
  /** The lowest position every streaming standby was last seen to have flushed, if known. */
  readonly standbyFlushLsn: string | null;
  /** The acknowledged, unconfirmed job ids above `standbyFlushLsn`, by commit position. */
  readonly window: readonly { readonly lsn: string; readonly jobIds: readonly string[] }[];
  /** The highest position of an entry dropped because the window was full, if any is still above the standby. */
  readonly windowTruncatedAt: string | null;
}

/** A commit acknowledged since the last position reading: its position is not known yet. */
interface PendingAcknowledgement {
  /** `performance.now()` once the commit had returned. */
  readonly ackAt: number;
  readonly synchronous: boolean;
  readonly jobIds: readonly string[];
}

/**
 * What this state replica has acknowledged, in WAL positions: the highest
 * position of every acknowledged write, the highest of those a synchronous
 * standby did not confirm, the standby's last known flush position, and a
 * bounded window of the acknowledged job ids that the standby was not yet
 * known to have. A commit is acknowledged before its position is known:
 * it waits (pending) for the next reading of the primary's flush position
 * sent after it, which bounds it from above. Only positions are compared;
 * nothing here reads the database (the rollback guard feeds it).
 */
export class AcknowledgedWatermark {
  private current: DatabaseLineage | undefined;
  private pending: PendingAcknowledgement[] = [];
  private acknowledged: WalPosition = 0n;
  private unconfirmed: WalPosition = 0n;
  private standbyFlush: WalPosition | undefined;
  private entries: WindowEntry[] = [];
  private windowSize = 0;
  private truncatedAt: WalPosition | undefined;
  private changes = 0;

  constructor(private readonly windowMax: number = WINDOW_JOB_IDS_MAX) {}

  /** The recorded lineage; undefined until the first observation (or a read file) set it. */
  get lineage(): DatabaseLineage | undefined {
    return this.current;
  }

  /** The highest position of any acknowledged write (0 before any). */
  get acknowledgedLsn(): WalPosition {
    return this.acknowledged;
  }

  /** The highest position of an acknowledged write no synchronous standby confirmed (0 before any). */
  get unconfirmedLsn(): WalPosition {
    return this.unconfirmed;
  }

  /**
   * Whether a commit no synchronous standby confirmed was acknowledged
   * after the last reading: its position is unknown, so it counts as
   * beyond any fork point.
   */
  get unboundedUnconfirmed(): boolean {
    return this.pending.some((ack) => !ack.synchronous);
  }

  /** The job ids of acknowledged commits whose position is not known yet. */
  get pendingJobIds(): string[] {
    return this.pending.flatMap((ack) => ack.jobIds);
  }

  /** The standby's last known flush position. */
  get standbyFlushLsn(): WalPosition | undefined {
    return this.standbyFlush;
  }

  /** Grows with every change, so a writer knows whether there is something new to save. */
  get revision(): number {
    return this.changes;
  }

  /**
   * Records a commit acknowledged at `lsn` (an upper bound of its commit
   * record's end) with the job ids it admitted. A commit a synchronous
   * standby confirmed is on the standby: it raises only the overall mark.
   */
  recordCommit(lsn: WalPosition, synchronous: boolean, jobIds: readonly string[] = []): void {
    const before = this.changes;
    if (lsn > this.acknowledged) {
      this.acknowledged = lsn;
      this.changes += 1;
    }
    if (synchronous) return;
    if (lsn > this.unconfirmed) {
      this.unconfirmed = lsn;
      if (this.changes === before) this.changes += 1;
    }
    if (jobIds.length > 0 && (this.standbyFlush === undefined || lsn > this.standbyFlush)) {
      this.addToWindow(lsn, jobIds);
      if (this.changes === before) this.changes += 1;
    }
  }

  /** A commit that returned at `ackAt` (`performance.now()`) and is being acknowledged; its position comes with the next reading. */
  recordAcknowledged(ackAt: number, synchronous: boolean, jobIds: readonly string[] = []): void {
    this.pending.push({ ackAt, synchronous, jobIds: [...jobIds] });
  }

  /**
   * A reading of the primary's flush position, by a statement sent at
   * `sentAt`: every commit acknowledged before then was flushed by then,
   * so `lsn` is its upper bound.
   */
  recordReading(sentAt: number, lsn: WalPosition): void {
    if (this.pending.length === 0) return;
    const later: PendingAcknowledgement[] = [];
    for (const ack of this.pending) {
      if (ack.ackAt < sentAt) this.recordCommit(lsn, ack.synchronous, ack.jobIds);
      else later.push(ack);
    }
    this.pending = later;
  }

  /** Records how far every standby has flushed: window entries at or below it are replicated and leave the window. */
  recordStandbyFlush(lsn: WalPosition): void {
    if (this.standbyFlush !== undefined && lsn <= this.standbyFlush) return;
    this.standbyFlush = lsn;
    const kept = this.entries.filter((entry) => entry.lsn > lsn);
    if (kept.length !== this.entries.length) {
      this.entries = kept;
      this.windowSize = kept.reduce((sum, entry) => sum + entry.jobIds.length, 0);
    }
    if (this.truncatedAt !== undefined && this.truncatedAt <= lsn) this.truncatedAt = undefined;
    this.changes += 1;
  }

  /** The window entries above `position`, and the highest dropped position if it is above it too. */
  windowAbove(position: WalPosition): { entries: WindowEntry[]; truncatedAt: WalPosition | undefined } {
    return {
      entries: this.entries.filter((entry) => entry.lsn > position),
      truncatedAt: this.truncatedAt !== undefined && this.truncatedAt > position ? this.truncatedAt : undefined,
    };
  }

  /**
   * Starts afresh on `lineage` at `position`: what was acknowledged before
   * is taken as it is now in the database (first sight of a database, or
   * an accepted rollback). The window empties.
   */
  startAt(lineage: DatabaseLineage, position: WalPosition): void {
    this.current = lineage;
    this.pending = [];
    this.acknowledged = position;
    this.unconfirmed = 0n;
    this.standbyFlush = undefined;
    this.entries = [];
    this.windowSize = 0;
    this.truncatedAt = undefined;
    this.changes += 1;
  }

  /** Follows the database onto a new timeline that kept every acknowledged write: positions stay, the lineage changes. */
  followTimeline(lineage: DatabaseLineage): void {
    this.current = lineage;
    this.standbyFlush = undefined;
    this.changes += 1;
  }

  /** The state to save. */
  snapshot(): WatermarkSnapshot | undefined {
    if (!this.current) return undefined;
    return {
      version: 1,
      systemIdentifier: this.current.systemIdentifier,
      timeline: this.current.timeline,
      acknowledgedLsn: formatWalPosition(this.acknowledged),
      unconfirmedLsn: formatWalPosition(this.unconfirmed),
      standbyFlushLsn: this.standbyFlush === undefined ? null : formatWalPosition(this.standbyFlush),
      window: this.entries.map((entry) => ({ lsn: formatWalPosition(entry.lsn), jobIds: [...entry.jobIds] })),
      windowTruncatedAt: this.truncatedAt === undefined ? null : formatWalPosition(this.truncatedAt),
    };
  }

  /** Restores a saved state (the watermark file of a previous run of this replica). */
  restore(saved: WatermarkSnapshot): void {
    this.current = { systemIdentifier: saved.systemIdentifier, timeline: saved.timeline };
    this.acknowledged = parseWalPosition(saved.acknowledgedLsn);
    this.unconfirmed = parseWalPosition(saved.unconfirmedLsn);
    this.standbyFlush = saved.standbyFlushLsn === null ? undefined : parseWalPosition(saved.standbyFlushLsn);
    this.entries = saved.window.map((entry) => ({ lsn: parseWalPosition(entry.lsn), jobIds: [...entry.jobIds] }));
    this.windowSize = this.entries.reduce((sum, entry) => sum + entry.jobIds.length, 0);
    this.truncatedAt = saved.windowTruncatedAt === null ? undefined : parseWalPosition(saved.windowTruncatedAt);
    this.changes += 1;
  }

  private addToWindow(lsn: WalPosition, jobIds: readonly string[]): void {
    this.entries.push({ lsn, jobIds: [...jobIds] });
    this.windowSize += jobIds.length;
    while (this.windowSize > this.windowMax && this.entries.length > 0) {
      // Entries arrive in commit order, give or take concurrent batches: drop the lowest.
      let lowest = 0;
      for (let index = 1; index < this.entries.length; index++) if ((this.entries[index] as WindowEntry).lsn < (this.entries[lowest] as WindowEntry).lsn) lowest = index;
      const [dropped] = this.entries.splice(lowest, 1) as [WindowEntry];
      this.windowSize -= dropped.jobIds.length;
      if (this.truncatedAt === undefined || dropped.lsn > this.truncatedAt) this.truncatedAt = dropped.lsn;
    }
  }
}

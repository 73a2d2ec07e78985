import { DocketError } from '@docket/contracts';
import type { Logger } from '@docket/service-kit';
import type pg from 'pg';
import { SQLSTATE } from '../db/sqlstate.js';
import { existingJobIds, readDatabaseLineage, readTimelineHistory, type DatabaseLineageRow } from '../db/queries/database-lineage.js';
import { AcknowledgedWatermark, type DatabaseLineage } from './acknowledged-watermark.js';
import { judgeHistory, type ForkSource, type RollbackCause } from './rollback-verdict.js';
import { formatWalPosition, parseTimelineHistory, parseWalPosition, timelineHistoryPath, timelineOfWalFile, type TimelineSwitch, type WalPosition } from './wal-position.js';
import { WatermarkWriter, readWatermarkFile } from './watermark-file.js';

/** A rollback this replica found, kept until an operator accepts it. */
export interface FoundRollback {
  readonly cause: RollbackCause;
  readonly recorded: DatabaseLineage;
  readonly observed: DatabaseLineage;
  readonly forkLsn: WalPosition;
  readonly forkSource: ForkSource;
  /** The highest acknowledged position that may be lost (unconfirmed writes for a new timeline, every write otherwise). */
  readonly acknowledgedLsn: WalPosition;
  /** Whether writes were acknowledged after the last position reading: beyond `acknowledgedLsn`, at unknown positions. */
  readonly unboundedAcknowledgements: boolean;
}

/** What `acceptRollback` reports. */
export interface RollbackReport {
  readonly rolledBack: boolean;
  readonly accepted: boolean;
  readonly rollback: FoundRollback | undefined;
  readonly checkedJobCount: number;
  readonly lostJobIds: readonly string[];
  readonly windowTruncated: boolean;
  readonly windowStartLsn: WalPosition | undefined;
}

/** The refusal every call gets while a rollback waits for an operator; its message names no position, path or statement. */
export function databaseRolledBack(): DocketError {
  return new DocketError('DATABASE_ROLLED_BACK', 'the database no longer has writes this service acknowledged (it failed over to a standby that was behind): an operator must run docket admin accept-rollback');
}

/**
 * Notices an asynchronous failover that dropped acknowledged writes.
 *
 * Every group commit reads the primary's WAL flush position as it opens
 * (`recordReading`, bounding the commits acknowledged before it) and
 * reports its own commit (`recordAcknowledged`), and every health probe
 * reads the primary's position and its standbys' flush position (`probe`);
 * the {@link AcknowledgedWatermark} keeps the highest
 * of them and the recent acknowledged job ids, and a watermark file keeps
 * them across restarts. Each new database connection (so the first one
 * after a failover, before any statement uses it) and each probe compares
 * the primary's system identifier, timeline and position with the
 * recorded ones (`judgeHistory`). When the new history lacks an
 * acknowledged write, the guard trips: health reports NOT_SERVING and
 * every call is refused with UNAVAILABLE, reason DATABASE_ROLLED_BACK,
 * including calls that were already waiting for a connection (the check
 * runs again once they hold it), until `acceptRollback`.
 */
export class RollbackGuard {
  private readonly watermark = new AcknowledgedWatermark();
  private found: FoundRollback | undefined;
  private armed = false;
  private writer: WatermarkWriter | undefined;

  private constructor(private readonly logger: Logger) {}

  /**
   * A guard that keeps its watermark in `watermarkFile` (undefined: in
   * memory only, lost with the process) and starts from what that file
   * saved. A file that is not a watermark refuses the start.
   */
  static async open(watermarkFile: string | undefined, logger: Logger): Promise<RollbackGuard> {
    const guard = new RollbackGuard(logger);
    if (watermarkFile !== undefined) {
      const saved = await readWatermarkFile(watermarkFile);
      if (saved) guard.watermark.restore(saved);
      guard.writer = new WatermarkWriter(
        watermarkFile,
        () => ({ snapshot: guard.watermark.snapshot(), revision: guard.watermark.revision }),
        (error) => logger.warn('cannot save the acknowledged watermark; retrying with the next write', { errorCode: (error as NodeJS.ErrnoException).code ?? 'unknown' }),
      );
    }
    return guard;
  }

  /** From now on a found rollback refuses calls (before it, while the schema is prepared, it is only recorded). */
  arm(): void {
    this.armed = true;
  }

  /** The rollback waiting for an operator, if any. */
  get rollback(): FoundRollback | undefined {
    return this.found;
  }

  /** The refusal for a call made now, if the guard has tripped. */
  refusal(): DocketError | undefined {
    return this.armed && this.found ? databaseRolledBack() : undefined;
  }

  /** Throws the refusal if the guard has tripped. */
  assertServing(): void {
    const refusal = this.refusal();
    if (refusal) throw refusal;
  }

  /** A reading of the flush position (null: a server in recovery) by a statement sent at `sentAt`: it bounds every commit acknowledged before. */
  recordReading(sentAt: number, lsn: string | null): void {
    if (lsn === null) return;
    const before = this.watermark.revision;
    this.watermark.recordReading(sentAt, parseWalPosition(lsn));
    if (this.watermark.revision !== before) this.writer?.changed();
  }

  /** A group commit that returned and is about to be acknowledged, with the job ids it admitted. */
  recordAcknowledged(synchronous: boolean, jobIds: readonly string[]): void {
    this.watermark.recordAcknowledged(performance.now(), synchronous, jobIds);
  }

  /** Checks a new connection's server before it is used (the pool's connect hook). */
  async checkConnection(client: pg.ClientBase): Promise<void> {
    await this.observe(client, await readDatabaseLineage(client));
  }

  /**
   * The health probe: reads the primary's lineage, position and standbys
   * over `pool`, judges it, samples the position as acknowledged (it
   * bounds every write acknowledged before it), and rejects while the
   * guard has tripped, so health reports NOT_SERVING.
   */
  async probe(pool: pg.Pool): Promise<void> {
    const sentAt = performance.now();
    const row = await readDatabaseLineage(pool);
    await this.observe(pool, row);
    if (this.found) throw databaseRolledBack();
    if (row.flushLsn === null) return;
    const position = parseWalPosition(row.flushLsn);
    // It bounds the group commits acknowledged before it, and every other write too (owner calls, transitions).
    this.watermark.recordReading(sentAt, position);
    this.watermark.recordCommit(position, row.synchronous);
    this.writer?.changed();
  }

  /**
   * Reports what the rollback may have lost and, unless `dryRun`, accepts
   * it: the watermark starts afresh at the primary's present position and
   * the replica serves again. The acknowledged job ids above the fork
   * point are looked up: those missing are lost.
   */
  async acceptRollback(pool: pg.Pool, dryRun: boolean): Promise<RollbackReport> {
    const rollback = this.found;
    if (!rollback) return { rolledBack: false, accepted: false, rollback: undefined, checkedJobCount: 0, lostJobIds: [], windowTruncated: false, windowStartLsn: undefined };
    const { entries, truncatedAt } = this.watermark.windowAbove(rollback.forkLsn);
    // Jobs acknowledged after the last reading have no position yet: they are checked too.
    const ids = [...new Set([...entries.flatMap((entry) => entry.jobIds), ...this.watermark.pendingJobIds])];
    const present = await existingJobIds(pool, ids);
    const lostJobIds = ids.filter((id) => !present.has(id));
    const windowStart = entries.reduce<WalPosition | undefined>((lowest, entry) => (lowest === undefined || entry.lsn < lowest ? entry.lsn : lowest), undefined);
    const report = { rolledBack: true, rollback, checkedJobCount: ids.length, lostJobIds, windowTruncated: truncatedAt !== undefined, windowStartLsn: windowStart };
    if (dryRun) return { ...report, accepted: false };
    const row = await readDatabaseLineage(pool);
    if (row.inRecovery || row.walFile === null || row.flushLsn === null) throw serverInRecovery();
    this.watermark.startAt(lineageOf(row), parseWalPosition(row.flushLsn));
    this.found = undefined;
    await this.writer?.flush();
    this.logger.warn('database rollback accepted by an operator: serving again', {
      cause: rollback.cause,
      forkLsn: formatWalPosition(rollback.forkLsn),
      acknowledgedLsn: formatWalPosition(rollback.acknowledgedLsn),
      lostJobs: lostJobIds.length,
      checkedJobs: ids.length,
    });
    return { ...report, accepted: true };
  }

  /** Saves what was not saved yet (on shutdown). */
  async close(): Promise<void> {
    await this.writer?.flush();
  }

  private async observe(client: pg.ClientBase | pg.Pool, row: DatabaseLineageRow): Promise<void> {
    // A standby, or a primary still being promoted (Patroni's check answers before promotion ends): the connection
    // must not be used, or its first write could land on the new timeline unchecked. Unavailable, retryable.
    if (row.inRecovery || row.walFile === null || row.flushLsn === null) throw serverInRecovery();
    if (this.found) return;
    const observed = lineageOf(row);
    const position = parseWalPosition(row.flushLsn);
    const recorded = this.watermark.lineage;
    if (!recorded) {
      this.watermark.startAt(observed, position);
      this.writer?.changed();
      return;
    }
    const history = recorded.timeline === observed.timeline ? undefined : await this.historyOf(client, observed.timeline);
    const verdict = judgeHistory(
      {
        lineage: recorded,
        acknowledgedLsn: this.watermark.acknowledgedLsn,
        unconfirmedLsn: this.watermark.unconfirmedLsn,
        unboundedUnconfirmed: this.watermark.unboundedUnconfirmed,
        standbyFlushLsn: this.watermark.standbyFlushLsn,
      },
      { lineage: observed, position, history },
    );
    // Another observation may have decided while the history (or a fresh position) was read.
    if (this.found) return;
    if (verdict.kind === 'rolled-back' && verdict.cause === 'rewound' && !(await this.stillBehind(client, observed))) return;
    if (this.found) return;
    if (verdict.kind === 'rolled-back') {
      this.found = {
        cause: verdict.cause,
        recorded,
        observed,
        forkLsn: verdict.forkLsn,
        forkSource: verdict.forkSource,
        acknowledgedLsn: verdict.cause === 'timeline' ? this.watermark.unconfirmedLsn : this.watermark.acknowledgedLsn,
        unboundedAcknowledgements: verdict.cause === 'timeline' && this.watermark.unboundedUnconfirmed,
      };
      this.logger.error('the database lost writes this service acknowledged: refusing every call until an operator runs docket admin accept-rollback', {
        cause: verdict.cause,
        recordedTimeline: recorded.timeline,
        timeline: observed.timeline,
        forkLsn: formatWalPosition(verdict.forkLsn),
        forkSource: verdict.forkSource,
        acknowledgedLsn: formatWalPosition(this.found.acknowledgedLsn),
        acknowledgedAfterLastReading: this.found.unboundedAcknowledgements,
      });
      return;
    }
    if (verdict.kind === 'followed') {
      this.watermark.followTimeline(observed);
      this.writer?.changed();
      this.logger.info('the database moved to a new timeline that kept every acknowledged write', {
        recordedTimeline: recorded.timeline,
        timeline: observed.timeline,
        forkLsn: formatWalPosition(verdict.forkLsn),
        forkSource: verdict.forkSource,
      });
      return;
    }
    if (row.standbyFlushLsn !== null) {
      this.watermark.recordStandbyFlush(parseWalPosition(row.standbyFlushLsn));
      this.writer?.changed();
    }
  }

  /**
   * Whether the primary, on the same timeline, is still behind what was
   * acknowledged by a reading sent after every reading recorded so far.
   * The position an observation judged was read before it was judged, and
   * meanwhile other connections may have recorded later readings (a busy
   * pool opening a connection while group commits go on): that is no
   * rollback. On one server the flush position only grows, so a statement
   * sent now reads at least every position recorded before it was sent; a
   * primary still behind that is behind for real.
   */
  private async stillBehind(client: pg.ClientBase | pg.Pool, observed: DatabaseLineage): Promise<boolean> {
    const acknowledged = this.watermark.acknowledgedLsn;
    const row = await readDatabaseLineage(client);
    if (row.inRecovery || row.walFile === null || row.flushLsn === null) throw serverInRecovery();
    const now = lineageOf(row);
    if (now.timeline !== observed.timeline || now.systemIdentifier !== observed.systemIdentifier) return true;
    return parseWalPosition(row.flushLsn) < acknowledged;
  }

  /** The timeline's history, or undefined when it cannot be read or trusted (then the verdict falls back on the standby's position). */
  private async historyOf(client: pg.ClientBase | pg.Pool, timeline: number): Promise<TimelineSwitch[] | undefined> {
    const text = await readTimelineHistory(client, timelineHistoryPath(timeline));
    if (text === null) return undefined;
    try {
      return parseTimelineHistory(text);
    } catch (error) {
      this.logger.warn('the timeline history could not be read: judging by the standby position', { timeline, error: (error as Error).name });
      return undefined;
    }
  }
}

/** A server in recovery, as PostgreSQL itself refuses a connection it cannot serve yet (57P03): unavailable, retryable, and the connection is not kept. */
function serverInRecovery(): Error {
  return Object.assign(new Error('the database server is in recovery'), { code: SQLSTATE.cannotConnectNow });
}

function lineageOf(row: DatabaseLineageRow): DatabaseLineage {
  return { systemIdentifier: row.systemIdentifier, timeline: timelineOfWalFile(row.walFile as string) };
}

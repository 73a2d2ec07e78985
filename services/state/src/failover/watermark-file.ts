import { open, readFile, rename, rm } from 'node:fs/promises';
import { parseWalPosition } from './wal-position.js';
import type { WatermarkSnapshot } from './acknowledged-watermark.js';

/** How often, at most, the watermark file is rewritten while writes are acknowledged. */
export const WATERMARK_SAVE_INTERVAL_MS = 1_000;

/**
 * Reads a saved watermark. Undefined when there is no file (a replica's
 * first start); a file that is not a watermark (truncated, edited, another
 * version) throws, so that the replica refuses to start rather than forget
 * what it acknowledged. The message names no path.
 */
export async function readWatermarkFile(path: string): Promise<WatermarkSnapshot | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return parseWatermark(text);
}

/** Checks and returns the saved watermark in `text`; throws `the watermark file is not valid` on any deviation. */
export function parseWatermark(text: string): WatermarkSnapshot {
  const invalid = (): Error => new Error('the watermark file is not valid');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid();
  }
  const saved = value as Partial<Record<keyof WatermarkSnapshot, unknown>> | null;
  const isLsn = (lsn: unknown): lsn is string => {
    if (typeof lsn !== 'string') return false;
    try {
      parseWalPosition(lsn);
      return true;
    } catch {
      return false;
    }
  };
  if (
    typeof saved !== 'object' ||
    saved === null ||
    saved.version !== 1 ||
    !(saved.systemIdentifier === null || (typeof saved.systemIdentifier === 'string' && /^\d+$/.test(saved.systemIdentifier))) ||
    typeof saved.timeline !== 'number' ||
    !Number.isInteger(saved.timeline) ||
    saved.timeline < 1 ||
    !isLsn(saved.acknowledgedLsn) ||
    !isLsn(saved.unconfirmedLsn) ||
    !(saved.standbyFlushLsn === null || isLsn(saved.standbyFlushLsn)) ||
    !(saved.windowTruncatedAt === null || isLsn(saved.windowTruncatedAt)) ||
    !Array.isArray(saved.window) ||
    !saved.window.every(
      (entry: unknown) =>
        typeof entry === 'object' &&
        entry !== null &&
        isLsn((entry as { lsn?: unknown }).lsn) &&
        Array.isArray((entry as { jobIds?: unknown }).jobIds) &&
        ((entry as { jobIds: unknown[] }).jobIds).every((id) => typeof id === 'string'),
    )
  ) {
    throw invalid();
  }
  return saved as WatermarkSnapshot;
}

/**
 * Writes `snapshot` to `path` atomically: a temporary file beside it,
 * flushed to disk, renamed over the old one. A reader (this replica's next
 * start) sees the old watermark or the new one, never half of either.
 */
export async function writeWatermarkFile(path: string, snapshot: WatermarkSnapshot): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`;
  const file = await open(temporary, 'w', 0o600);
  try {
    await file.writeFile(`${JSON.stringify(snapshot)}\n`);
    await file.sync();
  } finally {
    await file.close();
  }
  try {
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/**
 * Saves a watermark to one file at most once per `intervalMs`: `changed()`
 * after each change schedules a save if none is pending; `flush()` saves at
 * once what has not been saved (on shutdown, after an accepted rollback).
 * Saves never overlap. A failed save is reported to `onError` and retried
 * with the next change; the file then lags, it is never half-written.
 */
export class WatermarkWriter {
  private timer: NodeJS.Timeout | undefined;
  private saving: Promise<void> = Promise.resolve();
  private savedRevision = -1;

  constructor(
    private readonly path: string,
    private readonly current: () => { snapshot: WatermarkSnapshot | undefined; revision: number },
    private readonly onError: (error: unknown) => void,
    private readonly intervalMs: number = WATERMARK_SAVE_INTERVAL_MS,
  ) {}

  /** Schedules a save within `intervalMs`, unless one is already scheduled. */
  changed(): void {
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.intervalMs);
    this.timer.unref();
  }

  /** Saves now what was not saved yet; resolves once it is on disk (or the save failed and was reported). */
  flush(): Promise<void> {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.saving = this.saving.then(async () => {
      const { snapshot, revision } = this.current();
      if (!snapshot || revision === this.savedRevision) return;
      try {
        await writeWatermarkFile(this.path, snapshot);
        this.savedRevision = revision;
      } catch (error) {
        this.onError(error);
      }
    });
    return this.saving;
  }
}

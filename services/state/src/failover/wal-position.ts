/**
 * PostgreSQL's names for a place in its history: a WAL position (LSN,
 * written `X/Y`, two hex numbers of 32 bits), a timeline (a 32-bit id that
 * grows each time a standby is promoted or a backup is restored), and a
 * timeline's history file, which says where each ancestor timeline was
 * left. Pure parsing, no I/O: the failover room reads these from the
 * database and compares them here.
 */

/** A WAL position as a number, so positions compare with `<`. */
export type WalPosition = bigint;

/** The `X/Y` text PostgreSQL prints for an LSN (`pg_lsn`), each half 1 to 8 hex digits. */
const LSN_TEXT = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/;

/** Parses `X/Y` into a position; throws on anything else (it only ever comes from PostgreSQL or our own file). */
export function parseWalPosition(text: string): WalPosition {
  const match = LSN_TEXT.exec(text.trim());
  if (!match) throw new Error('not a WAL position');
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}

/** A position as PostgreSQL prints it: upper-case hex halves without leading zeros (`0/16B3748`). */
export function formatWalPosition(position: WalPosition): string {
  if (position < 0n || position > 0xffffffffffffffffn) throw new RangeError('a WAL position is an unsigned 64-bit number');
  return `${(position >> 32n).toString(16).toUpperCase()}/${(position & 0xffffffffn).toString(16).toUpperCase()}`;
}

/** A WAL segment file name: timeline, log and segment, 8 hex digits each. */
const WAL_FILE_NAME = /^([0-9A-F]{8})[0-9A-F]{16}$/;

/**
 * The timeline of a WAL segment file name, its first 8 hex digits
 * (`pg_walfile_name(pg_current_wal_lsn())` names the segment being written
 * on the server's current timeline: `000000030000000000000005` is timeline 3).
 */
export function timelineOfWalFile(name: string): number {
  const match = WAL_FILE_NAME.exec(name.trim());
  const timeline = match ? Number.parseInt(match[1] as string, 16) : 0;
  if (timeline < 1) throw new Error('not a WAL segment file name');
  return timeline;
}

/** The history file of `timeline` under the data directory, as `pg_read_file` takes it (`pg_wal/00000003.history`). */
export function timelineHistoryPath(timeline: number): string {
  if (!Number.isInteger(timeline) || timeline < 1 || timeline > 0xffffffff) throw new RangeError('a timeline is a positive 32-bit number');
  return `pg_wal/${timeline.toString(16).toUpperCase().padStart(8, '0')}.history`;
}

/** One line of a timeline history: `timeline` was left for its child at `switchpoint`. */
export interface TimelineSwitch {
  readonly timeline: number;
  readonly switchpoint: WalPosition;
}

/**
 * Parses a timeline history file: one line per ancestor, oldest first,
 * `<parent timeline>\t<switchpoint X/Y>\t<reason>`, with `#` comments and
 * blank lines ignored (PostgreSQL's `readTimeLineHistory`). Throws on a line
 * it cannot read: a history we cannot trust is treated by the caller as no
 * history at all.
 */
export function parseTimelineHistory(text: string): TimelineSwitch[] {
  const switches: TimelineSwitch[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const [timelineText = '', switchpointText = ''] = line.split(/\s+/);
    const timeline = Number(timelineText);
    if (!/^\d+$/.test(timelineText) || timeline < 1) throw new Error('a timeline history line has no timeline');
    switches.push({ timeline, switchpoint: parseWalPosition(switchpointText) });
  }
  return switches;
}

/**
 * Where a history left `timeline`: the switchpoint of its line, the first
 * WAL position that is not shared with the history's own timeline. Writes
 * committed on `timeline` at or before it are in the new history, writes
 * after it are not. Undefined when `timeline` is not an ancestor (a sibling
 * branch, or no history at all): then nothing about it is known.
 */
export function forkPointOf(history: readonly TimelineSwitch[], timeline: number): WalPosition | undefined {
  return history.find((entry) => entry.timeline === timeline)?.switchpoint;
}

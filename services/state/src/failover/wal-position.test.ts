import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { forkPointOf, formatWalPosition, parseTimelineHistory, parseWalPosition, timelineHistoryPath, timelineOfWalFile } from './wal-position.js';

describe('WAL positions', () => {
  it('read PostgreSQL pg_lsn text and compare as numbers', () => {
    expect(parseWalPosition('0/0')).toBe(0n);
    expect(parseWalPosition('0/16B3748')).toBe(0x16b3748n);
    expect(parseWalPosition('1/0')).toBe(0x100000000n);
    expect(parseWalPosition('FFFFFFFF/FFFFFFFF')).toBe(0xffffffffffffffffn);
    // Lexical order is not WAL order: 0/A0000000 is before 1/0.
    expect(parseWalPosition('0/A0000000') < parseWalPosition('1/0')).toBe(true);
    expect(parseWalPosition('0/9') < parseWalPosition('0/10')).toBe(true);
  });

  it('refuse anything that is not X/Y with 1 to 8 hex digits each', () => {
    for (const text of ['', '0', '/0', '0/', '0/0/0', 'G/0', '0/123456789', '-1/0', '0x1/0']) expect(() => parseWalPosition(text)).toThrow('not a WAL position');
  });

  it('print as PostgreSQL does, and read back what they print', () => {
    expect(formatWalPosition(0x16b3748n)).toBe('0/16B3748');
    expect(formatWalPosition(0x3_0000_0028n)).toBe('3/28');
    fc.assert(fc.property(fc.bigInt({ min: 0n, max: 0xffffffffffffffffn }), (position) => parseWalPosition(formatWalPosition(position)) === position));
    expect(() => formatWalPosition(-1n)).toThrow(RangeError);
  });
});

describe('timelines', () => {
  it('are the first 8 hex digits of the WAL file being written', () => {
    expect(timelineOfWalFile('000000010000000000000003')).toBe(1);
    expect(timelineOfWalFile('0000000A00000002000000FF')).toBe(10);
    for (const name of ['', '00000001', '000000000000000000000003', '00000001000000000000000g', '0000000100000000000000031']) expect(() => timelineOfWalFile(name)).toThrow();
  });

  it("name their history file under pg_wal, as pg_read_file takes it", () => {
    expect(timelineHistoryPath(2)).toBe('pg_wal/00000002.history');
    expect(timelineHistoryPath(0x1f)).toBe('pg_wal/0000001F.history');
    expect(() => timelineHistoryPath(0)).toThrow(RangeError);
  });
});

describe('timeline histories', () => {
  const history = parseTimelineHistory('1\t0/5000060\tno recovery target specified\n\n# a comment\n2\t0/7A0000A0\tbefore 2026-12-07 02:00:00+00\n');

  it('list where each ancestor was left, oldest first', () => {
    expect(history).toEqual([
      { timeline: 1, switchpoint: 0x5000060n },
      { timeline: 2, switchpoint: 0x7a0000a0n },
    ]);
    expect(parseTimelineHistory('')).toEqual([]);
  });

  it('give the fork point of an ancestor, and none for a timeline that is not one', () => {
    expect(forkPointOf(history, 1)).toBe(0x5000060n);
    expect(forkPointOf(history, 2)).toBe(0x7a0000a0n);
    expect(forkPointOf(history, 3)).toBeUndefined();
  });

  it('are refused when a line cannot be read', () => {
    expect(() => parseTimelineHistory('x\t0/1\treason')).toThrow();
    expect(() => parseTimelineHistory('1\tnot-a-position\treason')).toThrow();
    expect(() => parseTimelineHistory('0\t0/1\treason')).toThrow();
  });
});

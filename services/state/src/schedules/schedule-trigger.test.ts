import { describe, expect, it } from 'vitest';
import { isDocketError } from '@docket/contracts';
import { nextTickAfter, parseCronTrigger, parseIntervalTrigger } from './schedule-trigger.js';

const NOW = new Date('2026-12-01T12:00:00.000Z');

/** The field a refusal names, or a marker when it is not an INVALID_FIELD. */
function refusedField(parse: () => unknown): string {
  try {
    parse();
  } catch (error) {
    if (isDocketError(error) && error.reason === 'INVALID_FIELD' && error.grpcCode === 3) return error.fieldViolations[0]?.field ?? 'none';
    return 'not INVALID_FIELD';
  }
  return 'accepted';
}

/** The first `count` ticks strictly after `from`. */
function ticks(trigger: ReturnType<typeof parseCronTrigger>, from: string, count: number): string[] {
  const out: string[] = [];
  let at = new Date(from);
  for (let i = 0; i < count; i += 1) {
    at = nextTickAfter(trigger, at);
    out.push(at.toISOString());
  }
  return out;
}

describe('interval ticks', () => {
  it('fall on the multiples of the interval since the epoch, strictly after the given time', () => {
    const everySecond = parseIntervalTrigger(1_000);
    expect(nextTickAfter(everySecond, new Date('2026-12-01T12:00:00.000Z')).toISOString()).toBe('2026-12-01T12:00:01.000Z');
    expect(nextTickAfter(everySecond, new Date('2026-12-01T12:00:00.999Z')).toISOString()).toBe('2026-12-01T12:00:01.000Z');
    const everyHour = parseIntervalTrigger(3_600_000);
    expect(ticks(everyHour, '2026-12-01T12:34:56.789Z', 3)).toEqual(['2026-12-01T13:00:00.000Z', '2026-12-01T14:00:00.000Z', '2026-12-01T15:00:00.000Z']);
  });

  it.each([
    ['under a second', 999],
    ['fractional milliseconds', 1_000.5],
    ['over 366 days', 366 * 86_400_000 + 1],
    ['missing', undefined],
  ])('refuses an interval %s as INVALID_FIELD schedule.interval', (_name, ms) => {
    expect(refusedField(() => parseIntervalTrigger(ms))).toBe('schedule.interval');
  });

  it('accepts the bounds', () => {
    expect(parseIntervalTrigger(1_000)).toEqual({ kind: 'interval', intervalMs: 1_000 });
    expect(parseIntervalTrigger(366 * 86_400_000)).toEqual({ kind: 'interval', intervalMs: 366 * 86_400_000 });
  });
});

describe('cron ticks', () => {
  it('computes 5-field expressions in UTC by default', () => {
    const trigger = parseCronTrigger('*/15 9-10 * * 1-5', '', NOW);
    expect(trigger).toEqual({ kind: 'cron', expression: '*/15 9-10 * * 1-5', timeZone: 'UTC' });
    // 2026-12-01 is a Tuesday; 12:00 is past 10:45, so the next is Wednesday 09:00.
    expect(ticks(trigger, NOW.toISOString(), 3)).toEqual(['2026-12-02T09:00:00.000Z', '2026-12-02T09:15:00.000Z', '2026-12-02T09:30:00.000Z']);
  });

  it('is strictly after a time that is itself a tick', () => {
    const trigger = parseCronTrigger('0 * * * *', 'UTC', NOW);
    expect(nextTickAfter(trigger, new Date('2026-12-01T12:00:00.000Z')).toISOString()).toBe('2026-12-01T13:00:00.000Z');
  });

  it('evaluates in the named time zone', () => {
    const trigger = parseCronTrigger('0 9 * * *', 'Asia/Tokyo', NOW);
    // 09:00 in Tokyo (UTC+9, no DST) is 00:00 UTC.
    expect(ticks(trigger, '2026-12-01T12:00:00.000Z', 2)).toEqual(['2026-12-02T00:00:00.000Z', '2026-12-03T00:00:00.000Z']);
  });

  it('fires a local time that spring-forward skips at the first instant after the gap', () => {
    // America/New_York jumps 02:00 EST -> 03:00 EDT on 2026-03-08.
    const trigger = parseCronTrigger('30 2 * * *', 'America/New_York', NOW);
    expect(ticks(trigger, '2026-03-07T00:00:00.000Z', 3)).toEqual([
      '2026-03-07T07:30:00.000Z', // 02:30 EST
      '2026-03-08T07:30:00.000Z', // no 02:30 that day: 03:30 EDT
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
    ]);
  });

  it('fires a local time that fall-back repeats once, at its first occurrence', () => {
    // America/New_York falls back 02:00 EDT -> 01:00 EST on 2026-11-01: 01:30 happens twice.
    const trigger = parseCronTrigger('30 1 * * *', 'America/New_York', NOW);
    expect(ticks(trigger, '2026-10-31T00:00:00.000Z', 3)).toEqual([
      '2026-10-31T05:30:00.000Z', // 01:30 EDT
      '2026-11-01T05:30:00.000Z', // the first 01:30 (EDT) only
      '2026-11-02T06:30:00.000Z', // 01:30 EST
    ]);
  });

  it.each([
    ['six fields (seconds)', '0 0 * * * *', 'UTC', 'schedule.cron'],
    ['four fields', '0 * * *', 'UTC', 'schedule.cron'],
    ['a macro', '@daily', 'UTC', 'schedule.cron'],
    ['an out-of-range minute', '61 * * * *', 'UTC', 'schedule.cron'],
    ['garbage', 'every day at noon', 'UTC', 'schedule.cron'],
    ['a date that never comes', '0 0 31 2 *', 'UTC', 'schedule.cron'],
    ['empty', '', 'UTC', 'schedule.cron'],
    ['an unknown time zone', '0 * * * *', 'Mars/Olympus_Mons', 'schedule.time_zone'],
    ['a time zone with odd characters', '0 * * * *', 'UTC; drop table', 'schedule.time_zone'],
  ])('refuses %s as INVALID_FIELD', (_name, expression, zone, field) => {
    expect(refusedField(() => parseCronTrigger(expression, zone, NOW))).toBe(field);
  });

  it('never echoes the rejected text', () => {
    try {
      parseCronTrigger('secret-looking-cron * * * *', 'UTC', NOW);
      expect.unreachable();
    } catch (error) {
      expect(JSON.stringify(error) + String(error)).not.toContain('secret-looking');
    }
  });
});

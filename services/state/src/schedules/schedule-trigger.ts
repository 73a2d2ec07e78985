import { CronExpressionParser } from 'cron-parser';
import { invalidField } from '@docket/contracts';

/**
 * When a schedule fires: a 5-field cron expression evaluated in an IANA
 * time zone, or a fixed interval whose ticks fall on its multiples since
 * the Unix epoch (so a 1 s interval ticks on whole seconds, whoever
 * computes it, and a restart cannot shift the phase).
 */
export type ScheduleTrigger =
  | { readonly kind: 'cron'; readonly expression: string; readonly timeZone: string }
  | { readonly kind: 'interval'; readonly intervalMs: number };

/** The interval bounds: 1 second to 366 days, whole milliseconds (the table's check). */
export const INTERVAL_BOUNDS_MS = { min: 1_000, max: 366 * 86_400_000 } as const;

/** The time zone of a cron schedule that names none. */
export const DEFAULT_TIME_ZONE = 'UTC';

/**
 * A cron trigger, checked: exactly five whitespace-separated fields
 * (minute, hour, day of month, month, day of week; no seconds field, no
 * `@daily` macros), a valid IANA time zone (empty means UTC), and at least
 * one future tick. Each problem is INVALID_ARGUMENT, reason INVALID_FIELD,
 * naming `schedule.cron` or `schedule.time_zone`; the rejected text is
 * never echoed.
 */
export function parseCronTrigger(expression: string, timeZone: string, now: Date): ScheduleTrigger {
  const zone = timeZone === '' ? DEFAULT_TIME_ZONE : timeZone;
  if (!isTimeZone(zone)) throw invalidField('schedule.time_zone', 'must be an IANA time zone name, e.g. Europe/Paris');
  const fields = expression.trim().split(/\s+/);
  if (expression.length > 256 || fields.length !== 5 || fields.some((field) => field === '')) {
    throw invalidField('schedule.cron', 'must be a 5-field cron expression: minute hour day-of-month month day-of-week');
  }
  const trigger: ScheduleTrigger = { kind: 'cron', expression: fields.join(' '), timeZone: zone };
  try {
    nextTickAfter(trigger, now);
  } catch {
    throw invalidField('schedule.cron', 'must be a valid 5-field cron expression with at least one future time');
  }
  return trigger;
}

/** An interval trigger, checked: whole milliseconds within {@link INTERVAL_BOUNDS_MS}. */
export function parseIntervalTrigger(intervalMs: number | undefined): ScheduleTrigger {
  if (intervalMs === undefined || !Number.isInteger(intervalMs) || intervalMs < INTERVAL_BOUNDS_MS.min || intervalMs > INTERVAL_BOUNDS_MS.max) {
    throw invalidField('schedule.interval', 'must be whole milliseconds, from 1 second to 366 days');
  }
  return { kind: 'interval', intervalMs };
}

/**
 * The first tick strictly after `after`. Cron ticks are computed by
 * `cron-parser` in the trigger's time zone, with its DST rules: a local
 * time that a spring-forward gap skips fires at the first instant after
 * the gap (02:30 on a day that jumps 02:00 -> 03:00 fires at 03:30 local),
 * and a local time that a fall-back repeats fires once, at its first
 * occurrence. Throws when a cron expression has no future tick (refused at
 * creation, so only a stored row could do it).
 */
export function nextTickAfter(trigger: ScheduleTrigger, after: Date): Date {
  if (trigger.kind === 'interval') {
    return new Date((Math.floor(after.getTime() / trigger.intervalMs) + 1) * trigger.intervalMs);
  }
  const ticks = CronExpressionParser.parse(trigger.expression, { currentDate: after, tz: trigger.timeZone, strict: false });
  const next = ticks.next().toDate();
  if (Number.isNaN(next.getTime()) || next.getTime() <= after.getTime()) throw new RangeError('the cron expression has no next tick');
  return next;
}

/** Whether `zone` names a time zone this runtime knows (IANA database). */
function isTimeZone(zone: string): boolean {
  if (zone.length > 64 || !/^[A-Za-z0-9_+\-/]+$/.test(zone)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

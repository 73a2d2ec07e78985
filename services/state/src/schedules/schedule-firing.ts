import { computeRequestDigest, sha256Hex, type JsonValue, type RequestDigest } from '@docket/contracts';
import type { ScheduleOverlapName } from '../db/tables/index.js';
import { nextTickAfter, type ScheduleTrigger } from './schedule-trigger.js';

/**
 * The idempotency scope (the `operation` of the key binding) of the jobs a
 * schedule admits. No public RPC has this path, so no caller's key can
 * ever collide with a firing's.
 */
export const SCHEDULE_FIRING_OPERATION = 'docket.schedules/fire';

/** The most firings (admissions) one schedule makes in one step; the rest wait for the next step. */
export const MAX_FIRINGS_PER_STEP = 32;

/** The most ticks one schedule decides in one step (fired, missed, skipped or held), so a step stays bounded. */
export const MAX_TICKS_PER_STEP = 10_000;

/** Where a schedule's firing stands, as the firer found it under the row's lock. */
export interface FiringState {
  readonly trigger: ScheduleTrigger;
  readonly overlap: ScheduleOverlapName;
  readonly catchUpWindowMs: number;
  /** The nominal time of the next undecided tick. */
  readonly nextFireAt: Date;
  /** BUFFER_ONE's held tick. */
  readonly bufferedFireAt: Date | undefined;
  /** Whether the previous firing's job has not ended (WAITING, QUEUED, RUNNING, PAUSED, RETRY_WAIT, CANCELLING). */
  readonly previousJobActive: boolean;
}

/** What one step decides for one schedule. */
export interface FiringPlan {
  /** The nominal times to admit a job for, in order. */
  readonly fire: readonly Date[];
  readonly nextFireAt: Date;
  readonly bufferedFireAt: Date | undefined;
  /** Ticks older than the catch-up window: not fired. */
  readonly missed: number;
  readonly lastMissed: Date | undefined;
  /** Ticks not fired because of the overlap policy. */
  readonly overlapSkipped: number;
}

/**
 * Decides the ticks of one schedule that are due by `now` (the database
 * clock). Pure. In order:
 *
 * 1. A held BUFFER_ONE tick fires once the previous job has ended (the
 *    catch-up window does not apply to it: it was on time when held).
 * 2. Each tick with nominal time at or before `now`: older than
 *    `now - catchUpWindowMs` it is missed; otherwise ALLOW fires it, and
 *    SKIP and BUFFER_ONE fire it only if the previous firing's job has
 *    ended (a job fired in this step has not), BUFFER_ONE holding the first
 *    tick that cannot fire and skipping the rest.
 *
 * At most {@link MAX_FIRINGS_PER_STEP} firings and {@link MAX_TICKS_PER_STEP}
 * ticks: `nextFireAt` is then the first tick left undecided, which the next
 * step takes up.
 */
export function planFirings(state: FiringState, now: Date): FiringPlan {
  const fire: Date[] = [];
  const earliest = now.getTime() - state.catchUpWindowMs;
  let active = state.previousJobActive;
  let buffered = state.bufferedFireAt;
  if (buffered && !active) {
    fire.push(buffered);
    buffered = undefined;
    active = true;
  }
  let cursor = state.nextFireAt;
  let missed = 0;
  let lastMissed: Date | undefined;
  let overlapSkipped = 0;
  for (let ticks = 0; cursor.getTime() <= now.getTime() && ticks < MAX_TICKS_PER_STEP && fire.length < MAX_FIRINGS_PER_STEP; ticks += 1) {
    if (cursor.getTime() < earliest) {
      missed += 1;
      lastMissed = cursor;
    } else if (state.overlap === 'ALLOW' || !active) {
      fire.push(cursor);
      active = true;
    } else if (state.overlap === 'BUFFER_ONE' && !buffered) {
      buffered = cursor;
    } else {
      overlapSkipped += 1;
    }
    cursor = nextTickAfter(state.trigger, cursor);
  }
  return { fire, nextFireAt: cursor, bufferedFireAt: buffered, missed, lastMissed, overlapSkipped };
}

/**
 * The idempotency key of a schedule's tick: `fire.` + SHA-256 of the
 * schedule id (hex) + `.` + the nominal time in Unix milliseconds, 83
 * characters of the key alphabet. Whoever fires the tick, however often,
 * binds this one key, so the tick admits one job.
 */
export function firingKey(scheduleId: string, nominal: Date): string {
  return `fire.${sha256Hex(scheduleId)}.${nominal.getTime()}`;
}

/**
 * The request digest a firing binds its key to, computed like a public
 * request's (SPEC section 2) over the firing's own "request": the schedule
 * id, the nominal time (RFC 3339, milliseconds) and the template as proto3
 * JSON. A replay of the same tick has the same digest.
 */
export function firingDigest(owner: string, scheduleId: string, nominal: Date, templateJson: JsonValue): RequestDigest {
  return computeRequestDigest({
    operation: SCHEDULE_FIRING_OPERATION,
    subject: owner,
    request: { scheduleId, nominalFireTime: nominal.toISOString(), jobTemplate: templateJson },
  });
}

import { describe, expect, it } from 'vitest';
import { parseIdempotencyKey } from '@docket/contracts';
import { MAX_FIRINGS_PER_STEP, firingDigest, firingKey, planFirings, type FiringState } from './schedule-firing.js';
import { parseIntervalTrigger } from './schedule-trigger.js';

const at = (iso: string) => new Date(iso);
const iso = (dates: readonly Date[]) => dates.map((date) => date.toISOString());

function state(overrides: Partial<FiringState>): FiringState {
  return {
    trigger: parseIntervalTrigger(1_000),
    overlap: 'ALLOW',
    catchUpWindowMs: 5_000,
    nextFireAt: at('2026-12-01T12:00:00.000Z'),
    bufferedFireAt: undefined,
    previousJobActive: false,
    ...overrides,
  };
}

describe('planFirings', () => {
  it('fires nothing before the next tick is due', () => {
    const plan = planFirings(state({}), at('2026-12-01T11:59:59.999Z'));
    expect(plan.fire).toEqual([]);
    expect(plan.nextFireAt.toISOString()).toBe('2026-12-01T12:00:00.000Z');
  });

  it('fires the due tick, and every tick missed inside the catch-up window with its own nominal time', () => {
    const plan = planFirings(state({}), at('2026-12-01T12:00:03.500Z'));
    expect(iso(plan.fire)).toEqual(['2026-12-01T12:00:00.000Z', '2026-12-01T12:00:01.000Z', '2026-12-01T12:00:02.000Z', '2026-12-01T12:00:03.000Z']);
    expect(plan.nextFireAt.toISOString()).toBe('2026-12-01T12:00:04.000Z');
    expect(plan.missed).toBe(0);
  });

  it('counts ticks older than the catch-up window as missed and fires only those inside it', () => {
    // Down from 12:00:00 to 12:00:10 with a 5 s window: 12:00:05..12:00:10 fire, 12:00:00..12:00:04 are missed.
    const plan = planFirings(state({}), at('2026-12-01T12:00:10.000Z'));
    expect(iso(plan.fire)).toEqual([
      '2026-12-01T12:00:05.000Z',
      '2026-12-01T12:00:06.000Z',
      '2026-12-01T12:00:07.000Z',
      '2026-12-01T12:00:08.000Z',
      '2026-12-01T12:00:09.000Z',
      '2026-12-01T12:00:10.000Z',
    ]);
    expect(plan.missed).toBe(5);
    expect(plan.lastMissed?.toISOString()).toBe('2026-12-01T12:00:04.000Z');
    expect(plan.nextFireAt.toISOString()).toBe('2026-12-01T12:00:11.000Z');
  });

  it('SKIP fires only when the previous job has ended, and counts the others', () => {
    const busy = planFirings(state({ overlap: 'SKIP', previousJobActive: true }), at('2026-12-01T12:00:02.000Z'));
    expect(busy.fire).toEqual([]);
    expect(busy.overlapSkipped).toBe(3);
    // The job fired by the first tick is active for the ticks after it.
    const idle = planFirings(state({ overlap: 'SKIP' }), at('2026-12-01T12:00:02.000Z'));
    expect(iso(idle.fire)).toEqual(['2026-12-01T12:00:00.000Z']);
    expect(idle.overlapSkipped).toBe(2);
  });

  it('BUFFER_ONE holds the first blocked tick, skips later ones, and fires the held tick once the job ends', () => {
    const busy = planFirings(state({ overlap: 'BUFFER_ONE', previousJobActive: true }), at('2026-12-01T12:00:02.000Z'));
    expect(busy.fire).toEqual([]);
    expect(busy.bufferedFireAt?.toISOString()).toBe('2026-12-01T12:00:00.000Z');
    expect(busy.overlapSkipped).toBe(2);
    const ended = planFirings(
      state({ overlap: 'BUFFER_ONE', previousJobActive: false, bufferedFireAt: busy.bufferedFireAt, nextFireAt: busy.nextFireAt }),
      at('2026-12-01T12:00:02.500Z'),
    );
    expect(iso(ended.fire)).toEqual(['2026-12-01T12:00:00.000Z']);
    expect(ended.bufferedFireAt).toBeUndefined();
  });

  it('ALLOW fires every tick whatever the previous job does', () => {
    const plan = planFirings(state({ overlap: 'ALLOW', previousJobActive: true }), at('2026-12-01T12:00:01.000Z'));
    expect(iso(plan.fire)).toEqual(['2026-12-01T12:00:00.000Z', '2026-12-01T12:00:01.000Z']);
  });

  it('bounds the firings of one step and leaves the rest for the next', () => {
    const plan = planFirings(state({ catchUpWindowMs: 3_600_000 }), at('2026-12-01T12:10:00.000Z'));
    expect(plan.fire).toHaveLength(MAX_FIRINGS_PER_STEP);
    expect(plan.nextFireAt.getTime()).toBe(at('2026-12-01T12:00:00.000Z').getTime() + MAX_FIRINGS_PER_STEP * 1_000);
  });
});

describe('firing keys and digests', () => {
  it('derive from the schedule id and the nominal time only, and are valid idempotency keys', () => {
    const tick = at('2026-12-01T12:00:00.000Z');
    const key = firingKey('sch_abc12345', tick);
    expect(key).toBe(firingKey('sch_abc12345', new Date(tick.getTime())));
    expect(key).not.toBe(firingKey('sch_abc12345', new Date(tick.getTime() + 1_000)));
    expect(key).not.toBe(firingKey('sch_abc12346', tick));
    expect(key).toMatch(/^fire\.[0-9a-f]{64}\.1796126400000$/);
    const longest = firingKey('x'.repeat(128), tick);
    expect(parseIdempotencyKey(longest).reveal()).toBe(longest);
  });

  it('digest the same tick of the same template identically, and nothing else alike', () => {
    const tick = at('2026-12-01T12:00:00.000Z');
    const template = { queue: 'reports' };
    expect(firingDigest('ada', 'sch_abc12345', tick, template)).toBe(firingDigest('ada', 'sch_abc12345', tick, { queue: 'reports' }));
    expect(firingDigest('ada', 'sch_abc12345', tick, template)).not.toBe(firingDigest('bob', 'sch_abc12345', tick, template));
    expect(firingDigest('ada', 'sch_abc12345', tick, template)).not.toBe(firingDigest('ada', 'sch_abc12345', new Date(tick.getTime() + 1), template));
    expect(firingDigest('ada', 'sch_abc12345', tick, template)).toMatch(/^[0-9a-f]{64}$/);
  });
});

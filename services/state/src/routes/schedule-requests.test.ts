import { create } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { describe, expect, it } from 'vitest';
import { ScheduleOverlap, ScheduleSchema, ScheduleState } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { HandleScheduleCallRequestSchema } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { refusalOf } from '../../../../test/support/docket-refusal.js';
import { DEFAULT_CATCH_UP_WINDOW_MS, parseNewSchedule, parseScheduleCall } from './schedule-requests.js';

const NOW = new Date('2026-12-01T12:00:00.000Z');
const interval = (ms: number) => ({ case: 'interval' as const, value: durationFromMs(ms) });

describe('parseNewSchedule', () => {
  it('applies the defaults: SKIP, a one-hour window, active, a fresh id', () => {
    const parsed = parseNewSchedule(create(ScheduleSchema, { trigger: interval(60_000), jobTemplate: { queue: 'reports' } }), NOW);
    expect(parsed).toMatchObject({ scheduleId: undefined, overlap: 'SKIP', catchUpWindowMs: DEFAULT_CATCH_UP_WINDOW_MS, paused: false, trigger: { kind: 'interval', intervalMs: 60_000 } });
  });

  it('keeps what the caller chose', () => {
    const parsed = parseNewSchedule(
      create(ScheduleSchema, {
        scheduleId: 'nightly-report',
        trigger: { case: 'cron', value: '0 3 * * *' },
        timeZone: 'Europe/Paris',
        jobTemplate: { queue: 'reports' },
        overlap: ScheduleOverlap.BUFFER_ONE,
        catchUpWindow: durationFromMs(5_000),
        state: ScheduleState.PAUSED,
      }),
      NOW,
    );
    expect(parsed).toMatchObject({ scheduleId: 'nightly-report', overlap: 'BUFFER_ONE', catchUpWindowMs: 5_000, paused: true, trigger: { kind: 'cron', timeZone: 'Europe/Paris' } });
  });

  it("names a template's problems under schedule.job_template, keeping SubmitJob's reason", () => {
    expect(refusalOf(() => parseNewSchedule(create(ScheduleSchema, { trigger: interval(60_000), jobTemplate: { queue: 'UPPER' } }), NOW))).toEqual({
      reason: 'INVALID_FIELD',
      fields: ['schedule.job_template.queue'],
    });
    const huge = { blob: 'x'.repeat(300 * 1024) };
    expect(refusalOf(() => parseNewSchedule(create(ScheduleSchema, { trigger: interval(60_000), jobTemplate: { queue: 'reports', input: huge } }), NOW))).toEqual({
      reason: 'LIMIT_EXCEEDED',
      fields: ['schedule.job_template.input'],
    });
  });

  it('refuses a catch-up window that is not whole milliseconds', () => {
    expect(refusalOf(() => parseNewSchedule(create(ScheduleSchema, { trigger: interval(60_000), jobTemplate: { queue: 'q' }, catchUpWindow: { seconds: 1n, nanos: 500 } }), NOW)).fields).toEqual([
      'schedule.catch_up_window',
    ]);
  });
});

describe('parseScheduleCall', () => {
  const caller = { subject: 'ada', admin: false };

  it('refuses a mutation without a valid binding before looking at the schedule', () => {
    const request = create(HandleScheduleCallRequestSchema, {
      caller,
      operation: 'docket.admission.v1.AdmissionService/PauseSchedule',
      idempotencyKey: 'order-key-000001',
      requestDigest: 'A'.repeat(64),
      idempotencyTtl: durationFromMs(86_400_000),
      request: { case: 'pauseSchedule', value: { idempotencyKey: 'order-key-000001', scheduleId: 'sch_abcdefgh' } },
    });
    expect(refusalOf(() => parseScheduleCall(request)).reason).toBe('INVALID_FIELD');
  });

  it('reads a list page and refuses an out-of-range size', () => {
    const list = (pageSize: number) => create(HandleScheduleCallRequestSchema, { caller, request: { case: 'listSchedules', value: { pageSize } } });
    expect(parseScheduleCall(list(50))).toMatchObject({ case: 'list', pageSize: 50, after: undefined });
    expect(refusalOf(() => parseScheduleCall(list(0))).fields).toEqual(['page_size']);
  });

  it('refuses a malformed schedule id', () => {
    const request = create(HandleScheduleCallRequestSchema, { caller, request: { case: 'getSchedule', value: { scheduleId: 'no spaces' } } });
    expect(refusalOf(() => parseScheduleCall(request)).fields).toEqual(['schedule_id']);
  });
});

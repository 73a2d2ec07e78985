import { create } from '@bufbuild/protobuf';
import { Code, createClient, createRouterTransport, type ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import {
  AdmissionService,
  ScheduleOverlap,
  ScheduleSchema,
  ScheduleState,
  type CreateScheduleRequest,
  type PauseScheduleRequest,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { UsageError } from './command.js';
import { runCli } from './run-cli.js';
import { formatSchedule, parseScheduleArguments, runScheduleAction } from './schedule-commands.js';
import { capture } from './testing/captured-context.js';
import { refusal } from './testing/service-refusal.js';

const SCHEDULE = 'sch_01jdv2x0000000000000000000';
const USER_KEY = 'my-own-key-0123456789';

/** An in-memory AdmissionService that records the schedule calls it was sent. */
function fakeAdmission(fail?: ConnectError) {
  const creates: CreateScheduleRequest[] = [];
  const pauses: PauseScheduleRequest[] = [];
  const stored = create(ScheduleSchema, {
    scheduleId: SCHEDULE,
    trigger: { case: 'interval', value: { seconds: 60n } },
    jobTemplate: { queue: 'reports' },
    overlap: ScheduleOverlap.SKIP,
    state: ScheduleState.ACTIVE,
    nextFireTime: { seconds: 1_796_126_460n, nanos: 0 },
    lastFireTime: { seconds: 1_796_126_400n, nanos: 0 },
    lastJobId: 'job_01jdv2x0000000000000000000',
    firedCount: 3n,
  });
  const transport = createRouterTransport((router) => {
    router.service(AdmissionService, {
      createSchedule(request) {
        creates.push(request);
        if (fail) throw fail;
        return { schedule: { ...stored, trigger: request.schedule!.trigger, jobTemplate: request.schedule!.jobTemplate }, replayed: false };
      },
      getSchedule() {
        if (fail) throw fail;
        return { schedule: stored };
      },
      listSchedules() {
        return { schedules: [stored], nextPageToken: 'next-token' };
      },
      pauseSchedule(request) {
        pauses.push(request);
        return { schedule: { ...stored, state: ScheduleState.PAUSED, nextFireTime: undefined }, replayed: true };
      },
    });
  });
  return { client: createClient(AdmissionService, transport), creates, pauses };
}

describe('parseScheduleArguments', () => {
  it('reads a cron create into a CreateSchedule schedule', () => {
    const parsed = parseScheduleArguments([
      'create', '--cron', '0 3 * * *', '--time-zone', 'Europe/Paris', '--queue', 'reports', '--input', '{"report":"daily"}',
      '--overlap', 'buffer-one', '--catch-up-window', '10m', '--id', 'nightly-report', '--paused', '--key', USER_KEY,
    ]);
    expect(parsed.action).toBe('create');
    if (parsed.action !== 'create') return;
    expect(parsed.schedule.trigger).toEqual({ case: 'cron', value: '0 3 * * *' });
    expect(parsed.schedule.timeZone).toBe('Europe/Paris');
    expect(parsed.schedule.jobTemplate?.queue).toBe('reports');
    expect(parsed.schedule.jobTemplate?.input).toEqual({ report: 'daily' });
    expect(parsed.schedule.overlap).toBe(ScheduleOverlap.BUFFER_ONE);
    expect(parsed.schedule.catchUpWindow?.seconds).toBe(600n);
    expect(parsed.schedule.scheduleId).toBe('nightly-report');
    expect(parsed.schedule.state).toBe(ScheduleState.PAUSED);
    expect(parsed.owner.key).toBe(USER_KEY);
  });

  it('reads an interval create with the default overlap SKIP', () => {
    const parsed = parseScheduleArguments(['create', '--every', '1s', '--queue', 'ticks']);
    if (parsed.action !== 'create') throw new Error('expected create');
    expect(parsed.schedule.trigger).toEqual({ case: 'interval', value: expect.objectContaining({ seconds: 1n }) });
    expect(parsed.schedule.overlap).toBe(ScheduleOverlap.SKIP);
  });

  it.each([
    [[], /an action is required/],
    [['explode'], /an action is required/],
    [['create', '--queue', 'q'], /exactly one of --cron or --every/],
    [['create', '--cron', '* * * * *', '--every', '1m', '--queue', 'q'], /exactly one of --cron or --every/],
    [['create', '--every', '1m', '--time-zone', 'UTC', '--queue', 'q'], /--time-zone applies to --cron only/],
    [['create', '--every', '1m'], /--queue is required/],
    [['create', '--every', '1.5s', '--queue', 'q'], /--every must be a whole number/],
    [['create', '--every', '1m', '--queue', 'q', '--overlap', 'sometimes'], /--overlap must be/],
    [['create', '--every', '1m', '--queue', 'q', '--input', '[1]'], /--input must be a JSON object/],
    [['get'], /a schedule id is required/],
    [['pause', SCHEDULE, 'another'], /one schedule at a time/],
    [['delete', SCHEDULE, '--key', 'short'], /--key must be/],
    [['list', '--page-size', 'ten'], /--page-size must be a whole number/],
  ])('refuses %j', (args, message) => {
    expect(() => parseScheduleArguments(args)).toThrow(UsageError);
    expect(() => parseScheduleArguments(args)).toThrow(message);
  });
});

describe('runScheduleAction', () => {
  it('creates with the given key and prints the schedule', async () => {
    const fake = fakeAdmission();
    const context = capture();
    const code = await runScheduleAction(fake.client, parseScheduleArguments(['create', '--every', '1m', '--queue', 'reports', '--key', USER_KEY]), context);
    expect(code).toBe(0);
    expect(fake.creates[0]?.idempotencyKey).toBe(USER_KEY);
    expect(context.output().out).toMatch(new RegExp(`^created ${SCHEDULE} ACTIVE every 1m, queue reports, overlap SKIP, next 2026-12-01T12:01:00.000Z`));
    expect(context.output().err).toBe('');
  });

  it('generates and prints a key when none is given, and notes a replay', async () => {
    const fake = fakeAdmission();
    const context = capture();
    expect(await runScheduleAction(fake.client, parseScheduleArguments(['pause', SCHEDULE]), context)).toBe(0);
    const key = fake.pauses[0]?.idempotencyKey ?? '';
    expect(key).toMatch(/^cli-[A-Za-z0-9_-]{24}$/);
    expect(context.output().err).toContain(`--key ${key}`);
    expect(context.output().out).toMatch(/^paused sch_\S+ PAUSED .*next none.*\(replayed: this key was used before\)\n$/);
  });

  it('lists with the next page hint, and prints JSON with --json', async () => {
    const fake = fakeAdmission();
    const context = capture();
    expect(await runScheduleAction(fake.client, parseScheduleArguments(['list']), context)).toBe(0);
    expect(context.output().out).toContain('more: docket schedule list --page-token next-token');
    const json = capture();
    expect(await runScheduleAction(fake.client, parseScheduleArguments(['get', SCHEDULE, '--json']), json)).toBe(0);
    expect(JSON.parse(json.output().out)).toMatchObject({ schedule: { scheduleId: SCHEDULE, firedCount: '3' } });
  });

  it('prints a refusal with its code and reason and exits 1', async () => {
    const invalid = refusal(Code.InvalidArgument, 'INVALID_FIELD', 'invalid schedule.cron');
    const context = capture();
    const code = await runScheduleAction(fakeAdmission(invalid).client, parseScheduleArguments(['create', '--cron', 'nope', '--queue', 'q', '--key', USER_KEY]), context);
    expect(code).toBe(1);
    expect(context.output().err).toMatch(/^docket schedule create: invalid_argument INVALID_FIELD: invalid schedule.cron/);
  });

  it('is listed by docket help', async () => {
    const context = capture();
    expect(await runCli(['help'], context)).toBe(0);
    expect(context.output().out).toMatch(/schedule\s+create, read, pause, resume and delete periodic jobs/);
  });
});

describe('formatSchedule', () => {
  it('names a cron schedule with its zone', () => {
    expect(formatSchedule(create(ScheduleSchema, { scheduleId: SCHEDULE, trigger: { case: 'cron', value: '0 3 * * *' }, timeZone: 'Europe/Paris' }))).toContain(
      'cron "0 3 * * *" in Europe/Paris',
    );
  });
});

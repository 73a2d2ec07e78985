import { setTimeout as sleep } from 'node:timers/promises';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { durationFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
import { Code, type Client } from '@connectrpc/connect';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AdmissionService,
  ScheduleOverlap,
  ScheduleSchema,
  ScheduleState,
  type Schedule,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { clientFor, failureOf } from './support/clients.js';
import type { DocketServices } from './support/docket-services.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startClusterWithSql, stopClustersWithSql } from './support/cluster-with-sql.js';
import { newIdempotencyKey } from './support/keys.js';
import { until } from './support/polling.js';
import { jobCountOf, scheduledJobs } from './support/schedule-firings.js';

/*
 * Schedules (SPEC section 13) through the real services: CreateSchedule,
 * GetSchedule, ListSchedules, PauseSchedule, ResumeSchedule and
 * DeleteSchedule with SubmitJob's idempotency contract and owner
 * isolation, validation refusals that write nothing, and firings that
 * admit ordinary jobs whose journal names the schedule and the tick.
 */

/** What a test changes of a schedule. */
type ScheduleInit = Omit<MessageInitShape<typeof ScheduleSchema>, '$typeName'>;

let cluster: DocketServices;
let sql: pg.Client;
let alice: Client<typeof AdmissionService>;
let bob: Client<typeof AdmissionService>;
let admin: Client<typeof AdmissionService>;

beforeAll(async () => {
  ({ cluster, sql } = await startClusterWithSql(startInProcessCluster, {
    databaseUrl: await createMigratedTestDatabase('schedules'),
    env: { execution: { DOCKET_SCHEDULE_INTERVAL_MS: '200' } },
  }));
  alice = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor('sched-alice', 'user'));
  bob = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor('sched-bob', 'user'));
  admin = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor('sched-admin', 'admin'));
});

afterAll(stopClustersWithSql);

/** A schedule every `intervalMs` into a queue of its own, overridable. */
function everyInterval(intervalMs: number, overrides: ScheduleInit = {}): Schedule {
  return create(ScheduleSchema, {
    trigger: { case: 'interval', value: durationFromMs(intervalMs) },
    jobTemplate: { queue: 'reports', input: { report: 'daily' }, label: 'nightly report' },
    overlap: ScheduleOverlap.ALLOW,
    catchUpWindow: durationFromMs(60_000),
    ...overrides,
  });
}

async function scheduleCount(): Promise<number> {
  const result = await sql.query<{ count: string }>('select count(*) from schedules');
  return Number(result.rows[0]?.count);
}

describe('CreateSchedule', () => {
  it('creates a paused or active schedule whose next tick is the first after its creation', async () => {
    const created = await alice.createSchedule({ idempotencyKey: newIdempotencyKey('create'), schedule: everyInterval(3_600_000) });
    const schedule = created.schedule!;
    expect(created.replayed).toBe(false);
    expect(schedule.scheduleId).toMatch(/^sch_[a-z2-7]{26}$/);
    expect(schedule.owner).toBe('sched-alice');
    expect(schedule.state).toBe(ScheduleState.ACTIVE);
    const next = timestampMs(schedule.nextFireTime!);
    expect(next % 3_600_000).toBe(0);
    expect(next).toBeGreaterThan(timestampMs(schedule.createTime!));
    expect(next - timestampMs(schedule.createTime!)).toBeLessThanOrEqual(3_600_000);
    const got = await alice.getSchedule({ scheduleId: schedule.scheduleId });
    expect(got.schedule).toEqual(schedule);

    const paused = await alice.createSchedule({ idempotencyKey: newIdempotencyKey('create'), schedule: everyInterval(3_600_000, { state: ScheduleState.PAUSED }) });
    expect(paused.schedule?.state).toBe(ScheduleState.PAUSED);
    expect(paused.schedule?.nextFireTime).toBeUndefined();
  });

  it('replays the same request under the same key, and refuses another request under it with IDEMPOTENCY_CONFLICT, writing nothing', async () => {
    const idempotencyKey = newIdempotencyKey('create-replay');
    const first = await alice.createSchedule({ idempotencyKey, schedule: everyInterval(3_600_000) });
    const again = await alice.createSchedule({ idempotencyKey, schedule: everyInterval(3_600_000) });
    expect(again.replayed).toBe(true);
    expect(again.schedule).toEqual(first.schedule);
    expect(again.idempotencyExpiresAt).toEqual(first.idempotencyExpiresAt);
    const before = await scheduleCount();
    const conflict = await failureOf(alice.createSchedule({ idempotencyKey, schedule: everyInterval(7_200_000) }));
    expect(conflict).toMatchObject({ code: Code.AlreadyExists, reason: 'IDEMPOTENCY_CONFLICT', domain: 'docket' });
    expect(await scheduleCount()).toBe(before);
    // The key is scoped to the subject: another user's same key is another schedule.
    const bobs = await bob.createSchedule({ idempotencyKey, schedule: everyInterval(3_600_000) });
    expect(bobs.replayed).toBe(false);
    expect(bobs.schedule?.scheduleId).not.toBe(first.schedule?.scheduleId);
  });

  it('creates exactly one schedule for concurrent duplicates of one request', async () => {
    const idempotencyKey = newIdempotencyKey('create-race');
    const answers = await Promise.all(Array.from({ length: 20 }, () => alice.createSchedule({ idempotencyKey, schedule: everyInterval(3_600_000) })));
    const ids = new Set(answers.map((answer) => answer.schedule?.scheduleId));
    expect(ids.size).toBe(1);
    expect(answers.filter((answer) => !answer.replayed)).toHaveLength(1);
    const stored = await sql.query<{ count: string }>('select count(*) from schedules where id = $1', [[...ids][0]]);
    expect(Number(stored.rows[0]?.count)).toBe(1);
  });

  it('computes a cron schedule\'s next tick in its time zone', async () => {
    const { schedule } = await alice.createSchedule({
      idempotencyKey: newIdempotencyKey('cron'),
      schedule: everyInterval(0, { trigger: { case: 'cron', value: '0 9 * * *' }, timeZone: 'Asia/Tokyo' }),
    });
    expect(schedule?.trigger).toEqual({ case: 'cron', value: '0 9 * * *' });
    expect(schedule?.timeZone).toBe('Asia/Tokyo');
    const next = new Date(timestampMs(schedule!.nextFireTime!));
    // 09:00 in Tokyo (UTC+9, no DST) is 00:00 UTC, at most a day after the creation.
    expect(next.toISOString()).toMatch(/T00:00:00\.000Z$/);
    expect(next.getTime() - timestampMs(schedule!.createTime!)).toBeLessThanOrEqual(86_400_000);
    await alice.deleteSchedule({ idempotencyKey: newIdempotencyKey('stop'), scheduleId: schedule!.scheduleId });
  });

  it('takes a chosen id once: another create with it is ALREADY_EXISTS, even after deletion', async () => {
    const scheduleId = `nightly-${newIdempotencyKey('id').slice(-12)}`;
    const created = await alice.createSchedule({ idempotencyKey: newIdempotencyKey('chosen'), schedule: everyInterval(3_600_000, { scheduleId }) });
    expect(created.schedule?.scheduleId).toBe(scheduleId);
    const taken = await failureOf(bob.createSchedule({ idempotencyKey: newIdempotencyKey('chosen'), schedule: everyInterval(3_600_000, { scheduleId }) }));
    expect(taken).toMatchObject({ code: Code.AlreadyExists, reason: 'IDEMPOTENCY_CONFLICT' });
    expect(taken.violations.map((v) => v.field)).toEqual(['schedule.schedule_id']);
    await alice.deleteSchedule({ idempotencyKey: newIdempotencyKey('delete'), scheduleId });
    const reused = await failureOf(alice.createSchedule({ idempotencyKey: newIdempotencyKey('chosen'), schedule: everyInterval(3_600_000, { scheduleId }) }));
    expect(reused.code).toBe(Code.AlreadyExists);
  });

  it.each([
    ['a 6-field cron', { trigger: { case: 'cron', value: '0 0 * * * *' } }, 'schedule.cron'],
    ['a cron that does not parse', { trigger: { case: 'cron', value: '61 * * * *' } }, 'schedule.cron'],
    ['an unknown time zone', { trigger: { case: 'cron', value: '0 * * * *' }, timeZone: 'Mars/Olympus_Mons' }, 'schedule.time_zone'],
    ['a time zone on an interval', { timeZone: 'Europe/Paris' }, 'schedule.time_zone'],
    ['an interval under a second', { trigger: { case: 'interval', value: durationFromMs(500) } }, 'schedule.interval'],
    ['no trigger', { trigger: { case: undefined } }, 'schedule.cron'],
    ['no template', { jobTemplate: undefined }, 'schedule.job_template'],
    ['a template with an idempotency key', { jobTemplate: { queue: 'reports', idempotencyKey: 'abcdefghijklmnop' } }, 'schedule.job_template.idempotency_key'],
    ['a template with run_after', { jobTemplate: { queue: 'reports', runAfter: { seconds: 1n, nanos: 0 } } }, 'schedule.job_template.run_after'],
    ['a template with a bad queue', { jobTemplate: { queue: 'Not A Queue' } }, 'schedule.job_template.queue'],
    ['a catch-up window under a second', { catchUpWindow: durationFromMs(10) }, 'schedule.catch_up_window'],
    ['a catch-up window over 7 days', { catchUpWindow: durationFromMs(8 * 86_400_000) }, 'schedule.catch_up_window'],
    ['an unknown overlap policy', { overlap: 99 as ScheduleOverlap }, 'schedule.overlap'],
    ['a malformed schedule id', { scheduleId: 'no spaces allowed' }, 'schedule.schedule_id'],
  ] as [string, ScheduleInit, string][])('refuses %s as INVALID_ARGUMENT / INVALID_FIELD and writes nothing', async (_name, overrides, field) => {
    const before = await scheduleCount();
    const refused = await failureOf(alice.createSchedule({ idempotencyKey: newIdempotencyKey('invalid'), schedule: everyInterval(60_000, overrides) }));
    expect(refused).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD', domain: 'docket' });
    expect(refused.violations.map((v) => v.field)).toEqual([field]);
    expect(await scheduleCount()).toBe(before);
  });

  it('refuses a malformed idempotency key before anything else', async () => {
    const refused = await failureOf(alice.createSchedule({ idempotencyKey: 'short', schedule: everyInterval(60_000) }));
    expect(refused).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD' });
    expect(refused.violations.map((v) => v.field)).toEqual(['idempotency_key']);
  });
});

describe('owner isolation', () => {
  it("answers another user's schedule NOT_FOUND on every call, exactly like a missing one; an admin sees and manages it", async () => {
    const { schedule } = await alice.createSchedule({ idempotencyKey: newIdempotencyKey('iso'), schedule: everyInterval(3_600_000) });
    const scheduleId = schedule!.scheduleId;
    const missing = await failureOf(bob.getSchedule({ scheduleId: 'sch_doesnotexist0000000000' }));
    expect(missing).toMatchObject({ code: Code.NotFound, reason: 'NOT_FOUND' });
    for (const call of [
      () => bob.getSchedule({ scheduleId }),
      () => bob.pauseSchedule({ idempotencyKey: newIdempotencyKey('iso'), scheduleId }),
      () => bob.resumeSchedule({ idempotencyKey: newIdempotencyKey('iso'), scheduleId }),
      () => bob.deleteSchedule({ idempotencyKey: newIdempotencyKey('iso'), scheduleId }),
    ]) {
      expect(await failureOf(call())).toEqual(missing);
    }
    expect((await admin.getSchedule({ scheduleId })).schedule?.state).toBe(ScheduleState.ACTIVE);
    const bobs = await bob.listSchedules({ pageSize: 200 });
    expect(bobs.schedules.map((s) => s.scheduleId)).not.toContain(scheduleId);
    expect(bobs.schedules.every((s) => s.owner === 'sched-bob')).toBe(true);
    expect((await admin.getSchedule({ scheduleId })).schedule?.owner).toBe('sched-alice');
    const paused = await admin.pauseSchedule({ idempotencyKey: newIdempotencyKey('iso'), scheduleId });
    expect(paused.schedule?.state).toBe(ScheduleState.PAUSED);
  });
});

describe('ListSchedules', () => {
  it('pages newest first with a sealed token that only its subject can use', async () => {
    const owner = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor('sched-lister', 'user'));
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      ids.push((await owner.createSchedule({ idempotencyKey: newIdempotencyKey('list'), schedule: everyInterval(3_600_000) })).schedule!.scheduleId);
    }
    const first = await owner.listSchedules({ pageSize: 2 });
    const second = await owner.listSchedules({ pageSize: 2, pageToken: first.nextPageToken });
    const third = await owner.listSchedules({ pageSize: 2, pageToken: second.nextPageToken });
    expect([...first.schedules, ...second.schedules, ...third.schedules].map((s) => s.scheduleId)).toEqual([...ids].reverse());
    expect(third.nextPageToken).toBe('');
    const foreign = await failureOf(bob.listSchedules({ pageSize: 2, pageToken: first.nextPageToken }));
    expect(foreign).toMatchObject({ code: Code.InvalidArgument, reason: 'CURSOR_INVALID' });
  });
});

describe('firing', () => {
  it('admits ordinary jobs whose journal names the schedule and the nominal tick, and GetSchedule shows last and next fire times', async () => {
    const { schedule } = await alice.createSchedule({ idempotencyKey: newIdempotencyKey('fire'), schedule: everyInterval(1_000) });
    const scheduleId = schedule!.scheduleId;
    await until(async () => (await scheduledJobs(sql, scheduleId)).length >= 2, 'two firings');
    await alice.pauseSchedule({ idempotencyKey: newIdempotencyKey('stop'), scheduleId });
    const jobs = await scheduledJobs(sql, scheduleId);
    const [firstJob] = jobs;
    const job = (await alice.getJob({ jobId: firstJob!.jobId })).job!;
    expect(job.owner).toBe('sched-alice');
    expect(job.queue).toBe('reports');
    expect(job.label).toBe('nightly report');
    expect(job.input).toEqual({ report: 'daily' });
    expect(job.status).toBe(JobStatus.QUEUED);
    const events = clientFor(EventService, cluster.events.url, await cluster.tokenFor('sched-alice', 'user'));
    const journal = await events.readJobEvents({ jobId: firstJob!.jobId, afterSequence: 0n, pageSize: 10 });
    expect(journal.events.map((e) => e.type).slice(0, 2)).toEqual(['job.admitted', 'schedule.fired']);
    expect(journal.events[1]?.payload).toMatchObject({ schedule_id: scheduleId, nominal_fire_time: new Date(firstJob!.nominalMs).toISOString(), overlap: 'ALLOW' });
    // Ticks are one second apart, each with one job.
    jobs.slice(1).forEach((later, index) => expect(later.nominalMs - jobs[index]!.nominalMs).toBe(1_000));
    expect(new Set(jobs.map((j) => j.nominalMs)).size).toBe(jobs.length);
    const got = (await alice.getSchedule({ scheduleId })).schedule!;
    const last = jobs.at(-1)!;
    expect(got.lastJobId).toBe(last.jobId);
    expect(timestampMs(got.lastFireTime!)).toBe(last.nominalMs);
    expect(got.firedCount).toBe(BigInt(jobs.length));
    expect(got.lastFiredAt).toBeDefined();
  });

  it('decides a tick again as a replay of the same job (a firer that died after admitting, before advancing the schedule)', async () => {
    const { schedule } = await alice.createSchedule({ idempotencyKey: newIdempotencyKey('refire'), schedule: everyInterval(1_000) });
    const scheduleId = schedule!.scheduleId;
    await until(async () => (await scheduledJobs(sql, scheduleId)).length >= 3, 'three firings');
    await alice.pauseSchedule({ idempotencyKey: newIdempotencyKey('stop'), scheduleId });
    const before = await scheduledJobs(sql, scheduleId);
    const jobsBefore = await jobCountOf(sql, 'sched-alice');
    // Rewind the schedule to its first fired tick, as if every firing after it had died before committing the advance.
    await sql.query(`update schedules set state = 'ACTIVE', next_fire_at = $2 where id = $1`, [scheduleId, new Date(before[0]!.nominalMs)]);
    await until(async () => timestampMs((await alice.getSchedule({ scheduleId })).schedule!.nextFireTime!) > before.at(-1)!.nominalMs, 'the ticks decided again');
    await alice.pauseSchedule({ idempotencyKey: newIdempotencyKey('stop'), scheduleId });
    const after = await scheduledJobs(sql, scheduleId);
    // The re-decided ticks replayed their jobs: same job per tick, no second job, no second schedule.fired event.
    expect(after.slice(0, before.length)).toEqual(before);
    expect(new Set(after.map((job) => job.nominalMs)).size).toBe(after.length);
    expect(await jobCountOf(sql, 'sched-alice')).toBe(jobsBefore + after.length - before.length);
  });

  it('SKIP fires no tick while the previous firing job has not ended, and counts the skipped ticks', async () => {
    const { schedule } = await alice.createSchedule({
      idempotencyKey: newIdempotencyKey('skip'),
      schedule: everyInterval(1_000, { overlap: ScheduleOverlap.SKIP, jobTemplate: { queue: 'nobody-claims-this' } }),
    });
    const scheduleId = schedule!.scheduleId;
    await until(async () => (await alice.getSchedule({ scheduleId })).schedule!.overlapSkippedCount >= 2n, 'two skipped ticks');
    expect(await scheduledJobs(sql, scheduleId)).toHaveLength(1);
    await alice.deleteSchedule({ idempotencyKey: newIdempotencyKey('stop'), scheduleId });
  });
});

describe('BUFFER_ONE', () => {
  it('holds one tick while the previous job is active and fires it, with its own nominal time, once that job ends', async () => {
    const { schedule } = await alice.createSchedule({
      idempotencyKey: newIdempotencyKey('buffer'),
      schedule: everyInterval(1_000, { overlap: ScheduleOverlap.BUFFER_ONE, jobTemplate: { queue: 'nobody-claims-this-either' } }),
    });
    const scheduleId = schedule!.scheduleId;
    await until(async () => (await alice.getSchedule({ scheduleId })).schedule!.overlapSkippedCount >= 1n, 'a held and a skipped tick');
    const held = (await alice.getSchedule({ scheduleId })).schedule!;
    expect(held.bufferedFireTime).toBeDefined();
    const [first] = await scheduledJobs(sql, scheduleId);
    expect(await scheduledJobs(sql, scheduleId)).toHaveLength(1);
    await alice.cancelJob({ idempotencyKey: newIdempotencyKey('end'), jobId: first!.jobId });
    await until(async () => (await scheduledJobs(sql, scheduleId)).length >= 2, 'the held tick fired');
    const second = (await scheduledJobs(sql, scheduleId))[1]!;
    expect(second.nominalMs).toBe(timestampMs(held.bufferedFireTime!));
    await alice.deleteSchedule({ idempotencyKey: newIdempotencyKey('stop'), scheduleId });
  });
});

describe('PauseSchedule, ResumeSchedule, DeleteSchedule', () => {
  it('pause stops firing (replayable), resume fires again from the next tick without catching up, delete ends it for good', async () => {
    const owner = 'sched-lifecycle';
    const client = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor(owner, 'user'));
    const { schedule } = await client.createSchedule({ idempotencyKey: newIdempotencyKey('life'), schedule: everyInterval(1_000) });
    const scheduleId = schedule!.scheduleId;
    await until(async () => (await scheduledJobs(sql, scheduleId)).length >= 1, 'a first firing');

    const pauseKey = newIdempotencyKey('pause');
    const paused = await client.pauseSchedule({ idempotencyKey: pauseKey, scheduleId });
    expect(paused.schedule?.state).toBe(ScheduleState.PAUSED);
    expect(paused.schedule?.nextFireTime).toBeUndefined();
    const replay = await client.pauseSchedule({ idempotencyKey: pauseKey, scheduleId });
    expect(replay.replayed).toBe(true);
    expect(replay.schedule).toEqual(paused.schedule);
    // The same key for another schedule is another request: IDEMPOTENCY_CONFLICT, and that schedule stays as it was.
    const other = (await client.createSchedule({ idempotencyKey: newIdempotencyKey('other'), schedule: everyInterval(3_600_000) })).schedule!;
    expect(await failureOf(client.pauseSchedule({ idempotencyKey: pauseKey, scheduleId: other.scheduleId }))).toMatchObject({ code: Code.AlreadyExists, reason: 'IDEMPOTENCY_CONFLICT' });
    expect((await client.getSchedule({ scheduleId: other.scheduleId })).schedule).toEqual(other);
    // Pausing a paused schedule changes nothing (no new revision).
    const again = await client.pauseSchedule({ idempotencyKey: newIdempotencyKey('pause'), scheduleId });
    expect(again.schedule?.revision).toBe(paused.schedule?.revision);

    const whilePaused = await jobCountOf(sql, owner);
    // Real time: a negative assertion over ticks that fall due on the wall clock: two 1 s ticks pass while paused.
    await sleep(2_500);
    expect(await jobCountOf(sql, owner)).toBe(whilePaused);

    const resumed = await client.resumeSchedule({ idempotencyKey: newIdempotencyKey('resume'), scheduleId });
    expect(resumed.schedule?.state).toBe(ScheduleState.ACTIVE);
    const resumedAt = timestampMs(resumed.schedule!.updateTime!);
    expect(timestampMs(resumed.schedule!.nextFireTime!)).toBeGreaterThan(resumedAt);
    await until(async () => (await jobCountOf(sql, owner)) > whilePaused, 'a firing after resume');
    // No tick of the paused stretch was caught up.
    const fired = await scheduledJobs(sql, scheduleId);
    const pausedAt = timestampMs(paused.schedule!.updateTime!);
    expect(fired.filter((j) => j.nominalMs > pausedAt && j.nominalMs < resumedAt)).toEqual([]);

    const deleted = await client.deleteSchedule({ idempotencyKey: newIdempotencyKey('delete'), scheduleId });
    expect(deleted.schedule?.scheduleId).toBe(scheduleId);
    expect(await failureOf(client.getSchedule({ scheduleId }))).toMatchObject({ code: Code.NotFound, reason: 'NOT_FOUND' });
    expect(await failureOf(client.resumeSchedule({ idempotencyKey: newIdempotencyKey('resume'), scheduleId }))).toMatchObject({ code: Code.NotFound });
    expect((await client.listSchedules({ pageSize: 200 })).schedules.map((s) => s.scheduleId)).not.toContain(scheduleId);
    const afterDelete = await jobCountOf(sql, owner);
    // Real time: a negative assertion: two 1 s ticks of the deleted schedule would have fallen due by now.
    await sleep(2_000);
    expect(await jobCountOf(sql, owner)).toBe(afterDelete);
    // The jobs it admitted stay.
    expect(afterDelete).toBeGreaterThanOrEqual(2);
  });
});

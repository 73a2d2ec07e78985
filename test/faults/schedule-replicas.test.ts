import { setTimeout as sleep } from 'node:timers/promises';
import { create } from '@bufbuild/protobuf';
import { durationFromMs, timestampMs } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService, ScheduleOverlap, ScheduleSchema } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { clientFor } from '../support/clients.js';
import { startCluster, type DocketCluster } from '../support/cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { startClusterWithSql, stopClustersWithSql } from '../support/cluster-with-sql.js';
import { newIdempotencyKey } from '../support/keys.js';
import { until } from '../support/polling.js';
import { jobCountOf, scheduledJobs, type ScheduledJob } from '../support/schedule-firings.js';

/*
 * Issue 13's evidence for schedules: a schedule firing every second for
 * 30 s across three execution replicas (each runs the firer), one of them
 * SIGKILLed about 10 s in, just after a tick fell due, and restarted 10 s
 * later; in between, one of the two state replicas (where the firer's
 * transactions run: admission, journal, advance) is SIGKILLed just after a
 * tick and restarted: exactly one job per tick and no tick missed. Then every execution replica is SIGKILLed for longer
 * than the 5 s catch-up window and one is restarted: the ticks of the last
 * 5 s are fired late, each with its own nominal time; the older ones are
 * not fired, and the schedule counts them as missed. Everything is read
 * from the database (the `schedule.fired` events, the jobs, the
 * idempotency records), so nothing the API might hide escapes the count.
 */

const OWNER = 'schedule-fault-owner';
const TICK_MS = 1_000;
const WINDOW_MS = 5_000;
const RUN_MS = 30_000;
const OUTAGE_MS = 9_000;
/** How late a tick fired on time may be: the firer wakes at the tick, a replica may be busy or just killed. */
const ON_TIME_SLACK_MS = 2_500;
/** How long after a tick falls due a process is killed: while the firer is admitting it. */
const KILL_AFTER_TICK_MS = 15;

let cluster: DocketCluster;
let sql: pg.Client;
let client: Client<typeof AdmissionService>;

beforeAll(async () => {
  ({ cluster, sql } = await startClusterWithSql(startCluster, {
    databaseUrl: await createMigratedTestDatabase('schedule-replicas'),
    replicas: { state: 2, execution: 3 },
    env: { execution: { DOCKET_SCHEDULE_INTERVAL_MS: '250' } },
  }));
  client = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor(OWNER, 'user'));
});

afterAll(stopClustersWithSql);

/** The whole-second ticks in (fromMs, toMs]. */
function ticksBetween(fromMs: number, toMs: number): number[] {
  const ticks: number[] = [];
  for (let tick = (Math.floor(fromMs / TICK_MS) + 1) * TICK_MS; tick <= toMs; tick += TICK_MS) ticks.push(tick);
  return ticks;
}

/** Fails unless every tick has at most one job, and every job of the owner is one tick's. */
async function expectOneJobPerTick(scheduleId: string, jobs: readonly ScheduledJob[]): Promise<void> {
  const nominal = jobs.map((job) => job.nominalMs);
  expect(new Set(nominal).size).toBe(jobs.length);
  expect(new Set(jobs.map((job) => job.jobId)).size).toBe(jobs.length);
  expect(await jobCountOf(sql, OWNER)).toBe(jobs.length);
  const bindings = await sql.query<{ count: string }>(`select count(*) from idempotency_records where subject = $1 and operation = 'docket.schedules/fire'`, [OWNER]);
  expect(Number(bindings.rows[0]?.count)).toBe(jobs.length);
  const schedule = (await client.getSchedule({ scheduleId })).schedule!;
  expect(schedule.firedCount).toBe(BigInt(jobs.length));
}

describe('a 1 s schedule across three execution replicas', () => {
  it('fires exactly one job per tick through a kill -9, catches up inside the window after an outage, and misses only older ticks', async () => {
    const created = await client.createSchedule({
      idempotencyKey: newIdempotencyKey('every-second'),
      schedule: create(ScheduleSchema, {
        trigger: { case: 'interval', value: durationFromMs(TICK_MS) },
        jobTemplate: { queue: 'ticks', input: { source: 'schedule' } },
        overlap: ScheduleOverlap.ALLOW,
        catchUpWindow: durationFromMs(WINDOW_MS),
      }),
    });
    const scheduleId = created.schedule!.scheduleId;
    const createdMs = timestampMs(created.schedule!.createTime!);

    // Phase 1: 30 s with three firers; replica 0 is SIGKILLed at 10 s and restarted at 20 s.
    // Killed a few milliseconds after a tick falls due, while the firers are at work on it.
    // Real time: the schedule fires on the wall clock, so the kills are placed at real instants of its 30 s run.
    await sleep(10_000 - (Date.now() % TICK_MS) + KILL_AFTER_TICK_MS);
    await cluster.replicas.execution[0]!.kill();
    // A state replica (where the firer's transactions run) killed the same way, and restarted at once.
    // Real time: placed just after a wall-clock tick, 15 s into the run.
    await sleep(5_000 - (Date.now() % TICK_MS) + KILL_AFTER_TICK_MS);
    await cluster.replicas.state[0]!.kill();
    await cluster.replicas.state[0]!.restart();
    // Real time: replica 0 stays down for real ticks until 20 s into the run.
    await sleep(20_000 - (Date.now() - createdMs) - (Date.now() % TICK_MS));
    await cluster.replicas.execution[0]!.restart();
    // Real time: phase one is a 30 s run of wall-clock ticks.
    await sleep(RUN_MS - (Date.now() - createdMs));
    const phaseOneEndMs = Date.now();
    const expected = ticksBetween(createdMs, phaseOneEndMs);
    // Until every tick due by the end of phase one has its job, or one cannot be on time any more (asserted below).
    await until(async () => {
      if (Date.now() - phaseOneEndMs >= ON_TIME_SLACK_MS) return true;
      const fired = new Set((await scheduledJobs(sql, scheduleId)).map((job) => job.nominalMs));
      return expected.every((tick) => fired.has(tick));
    }, 'every tick of phase one to be fired or overdue');

    const phaseOne = (await scheduledJobs(sql, scheduleId)).filter((job) => job.nominalMs <= phaseOneEndMs);
    expect(expected.length).toBeGreaterThanOrEqual(29);
    // No tick missed, none doubled, none invented, each on time.
    expect(phaseOne.map((job) => job.nominalMs)).toEqual(expected);
    for (const job of phaseOne) expect(job.createdMs - job.nominalMs).toBeLessThan(ON_TIME_SLACK_MS);
    expect(new Set(phaseOne.map((job) => job.jobId)).size).toBe(phaseOne.length);
    expect((await client.getSchedule({ scheduleId })).schedule!.missedCount).toBe(0n);

    // Phase 2: every firer SIGKILLed (just after a tick fell due) for longer than the catch-up window, then one restarted.
    // Real time: placed just after a wall-clock tick.
    await sleep(TICK_MS - (Date.now() % TICK_MS) + KILL_AFTER_TICK_MS);
    await Promise.all(cluster.replicas.execution.map((replica) => replica.kill()));
    const downMs = Date.now();
    // Real time: the outage must outlast the 5 s catch-up window on the wall clock so that some ticks fall out of it.
    await sleep(OUTAGE_MS);
    const restartMs = Date.now();
    await cluster.replicas.execution[1]!.restart();
    // A restarted process on a loaded 2-core machine (CI beside other work) may take longer than the default to serve.
    await until(async () => {
      const schedule = (await client.getSchedule({ scheduleId })).schedule!;
      return schedule.lastFireTime !== undefined && timestampMs(schedule.lastFireTime) > restartMs;
    }, 'the firer to catch up after the outage', 60_000);
    // Pausing waits for a firing in progress, so the counts below are at rest.
    await client.pauseSchedule({ idempotencyKey: newIdempotencyKey('stop'), scheduleId });
    const endMs = timestampMs((await client.getSchedule({ scheduleId })).schedule!.lastFireTime!);

    const all = await scheduledJobs(sql, scheduleId);
    await expectOneJobPerTick(scheduleId, all);
    const fired = new Set(all.map((job) => job.nominalMs));
    const everyTick = ticksBetween(createdMs, endMs);
    const missed = everyTick.filter((tick) => !fired.has(tick));
    // Jobs exist only for ticks of the schedule.
    expect(all.every((job) => job.nominalMs % TICK_MS === 0 && job.nominalMs > createdMs && job.nominalMs <= endMs)).toBe(true);
    // Some ticks fell outside the window during a 9 s outage with a 5 s window; they were not fired, and are counted.
    expect(missed.length).toBeGreaterThanOrEqual(2);
    const schedule = (await client.getSchedule({ scheduleId })).schedule!;
    expect(schedule.missedCount).toBe(BigInt(missed.length));
    expect(timestampMs(schedule.lastMissedFireTime!)).toBe(Math.max(...missed));
    // Missed ticks all fell inside the outage, and the missed stretch is contiguous.
    expect(missed.every((tick) => tick > downMs - ON_TIME_SLACK_MS && tick < restartMs)).toBe(true);
    missed.slice(1).forEach((tick, index) => expect(tick - missed[index]!).toBe(TICK_MS));
    // Ticks inside the window were fired late, each with its own nominal time, and none older than the window.
    const late = all.filter((job) => job.nominalMs > downMs && job.createdMs - job.nominalMs >= ON_TIME_SLACK_MS);
    expect(late.length).toBeGreaterThanOrEqual(2);
    for (const job of all) expect(job.createdMs - job.nominalMs).toBeLessThanOrEqual(WINDOW_MS + ON_TIME_SLACK_MS);
    const firstLate = Math.min(...late.map((job) => job.createdMs));
    expect(missed.every((tick) => firstLate - tick > WINDOW_MS - 1_000)).toBe(true);
    // The catch-up's first job says how many ticks were missed before it.
    const notes = await sql.query<{ missed: string }>(
      `select (payload->>'missed_before') as missed from job_events where type = 'schedule.fired' and payload->>'schedule_id' = $1 and (payload->>'missed_before')::int > 0`,
      [scheduleId],
    );
    expect(notes.rows.reduce((sum, row) => sum + Number(row.missed), 0)).toBe(missed.length);
    // No replica ever had a firing refused.
    expect(cluster.replicas.execution.flatMap((replica) => replica.logs).some((line) => line.includes('schedule firing refused'))).toBe(false);
    expect(cluster.state.logs.some((line) => line.includes('schedule firing refused'))).toBe(false);
  }, 180_000);
});

import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Queryable } from '../database.js';
import type { SchedulesTable } from '../tables/index.js';
import type { Viewer } from './jobs.js';

/** A schedule row as stored. */
export type ScheduleRow = Selectable<SchedulesTable>;

/** A schedule row to insert. */
export type NewScheduleRow = Insertable<SchedulesTable>;

/** The columns a change of a schedule may set. */
export type SchedulePatch = Updateable<SchedulesTable>;

/**
 * Inserts a schedule unless its id is taken (by any owner, or by a deleted
 * schedule). Returns whether it was inserted.
 *
 * ```sql
 * insert into schedules (...) values (...) on conflict (id) do nothing returning id
 * ```
 */
export async function insertSchedule(db: Queryable, row: NewScheduleRow): Promise<boolean> {
  const inserted = await db.insertInto('schedules').values(row).onConflict((conflict) => conflict.column('id').doNothing()).returning('id').executeTakeFirst();
  return inserted !== undefined;
}

/**
 * A schedule the viewer may see, or undefined (another owner's, a deleted
 * and a missing one alike).
 *
 * ```sql
 * select * from schedules where id = $1 and state <> 'DELETED' and (owner = $2 or <admin>)
 * ```
 */
export async function findVisibleSchedule(db: Queryable, viewer: Viewer, scheduleId: string): Promise<ScheduleRow | undefined> {
  return visibleSchedule(db, viewer, scheduleId).executeTakeFirst();
}

/**
 * {@link findVisibleSchedule}, locking the row for the rest of the
 * transaction (a firing in progress holds it; the change waits for it).
 *
 * ```sql
 * select * from schedules where id = $1 and state <> 'DELETED' and (owner = $2 or <admin>) for update
 * ```
 */
export async function lockVisibleSchedule(db: Queryable, viewer: Viewer, scheduleId: string): Promise<ScheduleRow | undefined> {
  return visibleSchedule(db, viewer, scheduleId).forUpdate().executeTakeFirst();
}

function visibleSchedule(db: Queryable, viewer: Viewer, scheduleId: string) {
  const query = db.selectFrom('schedules').selectAll().where('id', '=', scheduleId).where('state', '<>', 'DELETED');
  return viewer.admin ? query : query.where('owner', '=', viewer.subject);
}

/** Where a page of schedules starts. */
export interface ScheduleListPosition {
  readonly createdAt: Date;
  readonly scheduleId: string;
}

/**
 * One keyset page of the schedules a viewer may see, newest first.
 *
 * ```sql
 * select * from schedules
 * where state <> 'DELETED' [and owner = $subject]
 *   [and (created_at, id) < ($after_created_at, $after_id)]
 * order by created_at desc, id desc limit $limit
 * ```
 */
export async function listVisibleSchedules(db: Queryable, viewer: Viewer, after: ScheduleListPosition | undefined, limit: number): Promise<ScheduleRow[]> {
  let query = db.selectFrom('schedules').selectAll().where('state', '<>', 'DELETED');
  if (!viewer.admin) query = query.where('owner', '=', viewer.subject);
  if (after) query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.createdAt, after.scheduleId)));
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

/**
 * Writes a change of a schedule and returns the row as committed.
 *
 * ```sql
 * update schedules set ... where id = $1 returning *
 * ```
 */
export async function updateSchedule(db: Queryable, scheduleId: string, patch: SchedulePatch): Promise<ScheduleRow> {
  return db.updateTable('schedules').set(patch).where('id', '=', scheduleId).returningAll().executeTakeFirstOrThrow();
}

/**
 * Locks the next schedule with something due by the database clock,
 * skipping rows another firer holds and those this step already took: a
 * tick whose nominal time has passed, or a BUFFER_ONE tick held while the
 * previous firing's job ran and that job has now ended.
 *
 * ```sql
 * select * from schedules s
 * where s.state = 'ACTIVE' and s.id <> all($taken)
 *   and (s.next_fire_at <= now()
 *        or (s.buffered_fire_at is not null
 *            and not exists (select 1 from jobs j where j.id = s.last_job_id
 *                            and j.status in ('WAITING', 'QUEUED', 'RUNNING', 'PAUSED', 'RETRY_WAIT', 'CANCELLING'))))
 * order by s.next_fire_at limit 1
 * for update of s skip locked
 * ```
 */
export async function lockDueSchedule(db: Queryable, taken: readonly string[]): Promise<ScheduleRow | undefined> {
  const result = await sql<ScheduleRow>`
    select s.* from schedules s
    where s.state = 'ACTIVE' and s.id <> all(${[...taken]}::text[])
      and (s.next_fire_at <= now()
           or (s.buffered_fire_at is not null
               and not exists (select 1 from jobs j where j.id = s.last_job_id
                               and j.status in ('WAITING', 'QUEUED', 'RUNNING', 'PAUSED', 'RETRY_WAIT', 'CANCELLING'))))
    order by s.next_fire_at
    limit 1
    for update of s skip locked`.execute(db);
  return result.rows[0];
}

/**
 * The earliest next tick of any active schedule, so the firer can sleep
 * exactly until then.
 *
 * ```sql
 * select min(next_fire_at) as next from schedules where state = 'ACTIVE'
 * ```
 */
export async function nextScheduleDue(db: Queryable): Promise<Date | undefined> {
  const row = await db
    .selectFrom('schedules')
    .select((eb) => eb.fn.min('next_fire_at').as('next'))
    .where('state', '=', 'ACTIVE')
    .executeTakeFirst();
  return row?.next ?? undefined;
}

/**
 * The status of a job, if the job exists.
 *
 * ```sql
 * select status from jobs where id = $1
 * ```
 */
export async function jobStatusOf(db: Queryable, jobId: string): Promise<string | undefined> {
  const row = await db.selectFrom('jobs').select('status').where('id', '=', jobId).executeTakeFirst();
  return row?.status;
}

/**
 * Whether a job's journal already records its firing by `scheduleId` at
 * `nominal` (a firing decided again after its schedule did not advance).
 *
 * ```sql
 * select 1 from job_events
 * where job_id = $1 and type = 'schedule.fired'
 *   and payload->>'schedule_id' = $2 and payload->>'nominal_fire_time' = $3
 * ```
 */
export async function hasFiringEvent(db: Queryable, jobId: string, scheduleId: string, nominal: Date): Promise<boolean> {
  const row = await db
    .selectFrom('job_events')
    .select('sequence')
    .where('job_id', '=', jobId)
    .where('type', '=', 'schedule.fired')
    .where(sql<string>`payload->>'schedule_id'`, '=', scheduleId)
    .where(sql<string>`payload->>'nominal_fire_time'`, '=', nominal.toISOString())
    .executeTakeFirst();
  return row !== undefined;
}

import type pg from 'pg';

/** One job a schedule admitted, as its journal records it. */
export interface ScheduledJob {
  readonly jobId: string;
  /** The tick's nominal time (epoch ms), from the job's `schedule.fired` event. */
  readonly nominalMs: number;
  /** When the job was admitted (database clock, epoch ms). */
  readonly createdMs: number;
}

/**
 * Every job whose journal says schedule `scheduleId` fired it, oldest tick
 * first (read straight from the database, so nothing the API might hide).
 */
export async function scheduledJobs(sql: pg.Client, scheduleId: string): Promise<ScheduledJob[]> {
  const result = await sql.query<{ job_id: string; nominal: string; created_at: Date }>(
    `select e.job_id, e.payload->>'nominal_fire_time' as nominal, j.created_at
     from job_events e join jobs j on j.id = e.job_id
     where e.type = 'schedule.fired' and e.payload->>'schedule_id' = $1
     order by nominal, e.job_id`,
    [scheduleId],
  );
  return result.rows.map((row) => ({ jobId: row.job_id, nominalMs: Date.parse(row.nominal), createdMs: row.created_at.getTime() }));
}

/** How many jobs an owner has in all, fired or not. */
export async function jobCountOf(sql: pg.Client, owner: string): Promise<number> {
  const result = await sql.query<{ count: string }>('select count(*) from jobs where owner = $1', [owner]);
  return Number(result.rows[0]?.count ?? 0);
}

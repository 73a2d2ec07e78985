import type { Int8Column } from './json.js';

/** A schedule's overlap policy as stored. */
export type ScheduleOverlapName = 'SKIP' | 'BUFFER_ONE' | 'ALLOW';

/** A schedule's state as stored; DELETED rows read as NOT_FOUND. */
export type ScheduleStateName = 'ACTIVE' | 'PAUSED' | 'DELETED';

/**
 * The `schedules` table (migration 0008): one periodic job, its trigger
 * (cron in a time zone, or an interval), the SubmitJobRequest each firing
 * admits, and where its firing stands.
 */
export interface SchedulesTable {
  id: string;
  owner: string;
  cron: string | null;
  time_zone: string;
  interval_ms: Int8Column | null;
  /** docket.admission.v1.SubmitJobRequest, protobuf binary. */
  job_template: Buffer;
  overlap: ScheduleOverlapName;
  catch_up_window_ms: Int8Column;
  state: ScheduleStateName;
  revision: Int8Column;
  /** The nominal time of the next undecided tick; null unless ACTIVE. */
  next_fire_at: Date | null;
  last_fire_at: Date | null;
  last_job_id: string | null;
  last_fired_at: Date | null;
  buffered_fire_at: Date | null;
  fired_count: Int8Column;
  missed_count: Int8Column;
  last_missed_fire_at: Date | null;
  overlap_skipped_count: Int8Column;
  created_at: Date;
  updated_at: Date;
}

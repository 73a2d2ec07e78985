import type { IdempotencyRecordsTable } from './idempotency-records.js';
import type { JobEventsTable } from './job-events.js';
import type { JobChangesTable } from './job-changes.js';
import type { JobsTable } from './jobs.js';

export type { IdempotencyRecordsTable } from './idempotency-records.js';
export type { JobChangesTable } from './job-changes.js';
export type { JobEventsTable } from './job-events.js';
export type { JobLifecycleName, JobsTable, LostAttemptPolicyName } from './jobs.js';
export type { Int8Column, JsonObject, JsonValue } from './json.js';

/** The state service's database, as kysely sees it. */
export interface Database {
  jobs: JobsTable;
  job_events: JobEventsTable;
  idempotency_records: IdempotencyRecordsTable;
  job_changes: JobChangesTable;
}

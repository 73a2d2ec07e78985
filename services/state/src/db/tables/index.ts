import type { IdempotencyRecordsTable } from './idempotency-records.js';
import type { JobEventsTable } from './job-events.js';
import type { JobChangesTable } from './job-changes.js';
import type { JobQuarantineTable } from './job-quarantine.js';
import type { DeletionsTable, JobDependenciesTable, JobsTable, RetentionPoliciesTable } from './jobs.js';
import type { JobSignalsTable } from './signals.js';
import type { SchedulesTable } from './schedules.js';
import type { JobEffectsTable } from './effects.js';
import type {
  AttemptsTable,
  QueueKeysTable,
  QueueSettingsTable,
  WorkerIncarnationsTable,
  WorkerNamesTable,
  WorkerOperationsTable,
} from './workers.js';

// Every type of each table's module, and the JSON and int8 column types the queries use.
export type * from './idempotency-records.js';
export type * from './job-changes.js';
export type * from './job-events.js';
export type * from './job-quarantine.js';
export type * from './jobs.js';
export type * from './signals.js';
export type * from './schedules.js';
export type * from './effects.js';
export type * from './workers.js';
export type { Int8Column, JsonObject, JsonValue } from './json.js';

/** The state service's database, as kysely sees it. */
export interface Database {
  jobs: JobsTable;
  job_events: JobEventsTable;
  idempotency_records: IdempotencyRecordsTable;
  job_changes: JobChangesTable;
  worker_names: WorkerNamesTable;
  worker_incarnations: WorkerIncarnationsTable;
  attempts: AttemptsTable;
  worker_operations: WorkerOperationsTable;
  queue_settings: QueueSettingsTable;
  queue_keys: QueueKeysTable;
  job_signals: JobSignalsTable;
  job_effects: JobEffectsTable;
  deletions: DeletionsTable;
  retention_policies: RetentionPoliciesTable;
  job_quarantine: JobQuarantineTable;
  schedules: SchedulesTable;
  job_dependencies: JobDependenciesTable;
}

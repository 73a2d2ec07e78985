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

export type { IdempotencyRecordsTable } from './idempotency-records.js';
export type { JobChangesTable } from './job-changes.js';
export type { JobEventsTable } from './job-events.js';
export type { JobQuarantineTable } from './job-quarantine.js';
export type { DeletionStateName, DeletionsTable, JobDependenciesTable, JobLifecycleName, JobsTable, LostAttemptPolicyName, RetentionPoliciesTable, SettledStatusName } from './jobs.js';
export type { JobSignalsTable, SignalStateName } from './signals.js';
export type { ScheduleOverlapName, ScheduleStateName, SchedulesTable } from './schedules.js';
export type { EffectCancellationName, EffectStateName, JobEffectsTable } from './effects.js';
export type { Int8Column, JsonObject, JsonValue } from './json.js';
export type {
  AttemptStatusName,
  AttemptsTable,
  QueueKeysTable,
  QueueSettingsTable,
  WorkerIncarnationsTable,
  WorkerNamesTable,
  WorkerOperationsTable,
} from './workers.js';

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

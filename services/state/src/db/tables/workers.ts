/** `worker_names`: the persisted generation counter of each (subject, name). */
export interface WorkerNamesTable {
  subject: string;
  name: string;
  generation: string;
}

/** `worker_incarnations`: one row per registration. */
export interface WorkerIncarnationsTable {
  id: string;
  subject: string;
  name: string;
  generation: string;
  queues: string[];
  max_concurrency: number;
  registered_at: Date;
  /** Set when a later registration of the name superseded this one. */
  superseded_at: Date | null;
}

/** An attempt's state. */
export type AttemptStatusName = 'ACTIVE' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED' | 'PAUSED' | 'LOST';

/** `attempts`: every attempt of every job; the job row holds the live authority. */
export interface AttemptsTable {
  id: string;
  job_id: string;
  attempt_number: number;
  fence: string;
  worker_incarnation: string;
  queue: string;
  status: AttemptStatusName;
  started_at: Date;
  ended_at: Date | null;
}

/** `worker_operations`: the first response of every worker operation id. */
export interface WorkerOperationsTable {
  worker_incarnation: string;
  operation_id: string;
  rpc: string;
  request_digest: string;
  response: Buffer;
  created_at: Date;
  expires_at: Date;
}

/** `queue_settings`: per-queue, deployment-wide limits. */
export interface QueueSettingsTable {
  queue: string;
  max_concurrency: number;
}

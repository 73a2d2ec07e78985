import type { ColumnType, Generated } from 'kysely';
import type { JobStatusName } from '@docket/contracts';
import type { Int8Column } from './json.js';
import type { JobLifecycleName } from './jobs.js';

/** The `job_changes` table: the change feed, one entry per job change. */
export interface JobChangesTable {
  /** The writing transaction (xid8, as a decimal string). */
  transaction_id: ColumnType<string, never, never>;
  entry_id: Generated<bigint>;
  job_id: string;
  owner: string;
  queue: string;
  revision: Int8Column;
  status: JobStatusName;
  lifecycle: JobLifecycleName;
  changed_at: Date;
}

/**
 * The `job_quarantine` table: jobs that a background loop or a claim met
 * and could not settle for a reason of their own, skipped from then on
 * (see migration 0006). The job's rows are untouched.
 */
export interface JobQuarantineTable {
  job_id: string;
  /** What met the job: a maintenance task name, or CLAIM_JOBS. */
  task: string;
  /** The failure's class only (an error reason, a SQLSTATE, an error name); never its message. */
  error_class: string;
  quarantined_at: Date;
}

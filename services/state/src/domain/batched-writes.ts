import type pg from 'pg';
import { isRetryableTransactionFailure } from '../db/sqlstate.js';
import { admitJobs, type AdmissionOutcome, type AdmitJobCommand } from './admit-jobs.js';
import type { AttemptReport } from './attempt-reports.js';
import { claimJobs, type ClaimCommand, type ClaimOutcome } from './claim-jobs.js';
import { decideAttemptReports, type ReportResponse } from './decide-attempt-reports.js';
import type { ExecutionSettings } from './register-worker.js';
import { GroupCommit, type GroupCommitOptions, type ItemOutcome } from './group-commit.js';

/** How the state process groups concurrent writes into transactions. */
export interface BatchedWriteSettings {
  /** Admissions per transaction (DOCKET_ADMIT_BATCH_MAX, default 128). */
  readonly admitBatchMax: number;
  /** Admission transactions in flight per process (DOCKET_ADMIT_BATCHES_IN_FLIGHT, default 2). */
  readonly admitBatchesInFlight: number;
  /** Claims per transaction (DOCKET_CLAIM_BATCH_MAX, default 32). */
  readonly claimBatchMax: number;
  /** Attempt reports (renewals, progress, checkpoints, events, outcomes) per transaction (DOCKET_REPORT_BATCH_MAX, default 128). */
  readonly reportBatchMax: number;
  /** Claim and report transactions in flight per process, each (DOCKET_WORKER_BATCHES_IN_FLIGHT, default 2). */
  readonly workerBatchesInFlight: number;
}

/** The state process's group-committed write paths. */
export interface BatchedWrites {
  readonly admissions: GroupCommit<AdmitJobCommand, AdmissionOutcome>;
  readonly claims: GroupCommit<ClaimCommand, ClaimOutcome>;
  readonly reports: GroupCommit<AttemptReport, ReportResponse>;
}

/** How often a batch that hit a deadlock or serialization failure is decided afresh. */
const TRANSACTION_ATTEMPTS = 3;

/** Builds the group commits of one state process over its pool. */
export function batchedWrites(pool: pg.Pool, settings: BatchedWriteSettings, execution: ExecutionSettings): BatchedWrites {
  const batches = (maxBatch: number, maxInFlight: number): GroupCommitOptions => ({ maxBatch, maxInFlight });
  return {
    admissions: new GroupCommit(
      (items) => retryingTransactionFailures(() => admitJobs(pool, items)),
      batches(settings.admitBatchMax, settings.admitBatchesInFlight),
    ),
    claims: new GroupCommit(
      (items) => retryingTransactionFailures(() => claimJobs(pool, execution, items)),
      batches(settings.claimBatchMax, settings.workerBatchesInFlight),
    ),
    reports: new GroupCommit(
      (items) => retryingTransactionFailures(() => decideAttemptReports(pool, execution, items)),
      batches(settings.reportBatchMax, settings.workerBatchesInFlight),
    ),
  };
}

/**
 * Runs a batch's transaction again (from scratch) when it failed with a
 * deadlock or serialization failure; nothing of a failed attempt was
 * committed, so a fresh attempt decides every item anew.
 */
async function retryingTransactionFailures<Result>(decide: () => Promise<ItemOutcome<Result>[]>): Promise<ItemOutcome<Result>[]> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await decide();
    } catch (error) {
      if (attempt >= TRANSACTION_ATTEMPTS || !isRetryableTransactionFailure(error)) throw error;
    }
  }
}

import type pg from 'pg';
import { isRetryableTransactionFailure } from '../db/sqlstate.js';
import { admitJobs, type AdmissionOutcome, type AdmitJobCommand } from './admit-jobs.js';
import { GroupCommit, type GroupCommitOptions, type ItemOutcome } from './group-commit.js';

/** How the state process groups concurrent writes into transactions. */
export interface BatchedWriteSettings {
  /** Admissions per transaction (DOCKET_ADMIT_BATCH_MAX, default 128). */
  readonly admitBatchMax: number;
  /** Admission transactions in flight per process (DOCKET_ADMIT_BATCHES_IN_FLIGHT, default 2). */
  readonly admitBatchesInFlight: number;
}

/** The state process's group-committed write paths. */
export interface BatchedWrites {
  readonly admissions: GroupCommit<AdmitJobCommand, AdmissionOutcome>;
}

/** How often a batch that hit a deadlock or serialization failure is decided afresh. */
const TRANSACTION_ATTEMPTS = 3;

/** Builds the group commits of one state process over its pool. */
export function batchedWrites(pool: pg.Pool, settings: BatchedWriteSettings): BatchedWrites {
  const admitting: GroupCommitOptions = { maxBatch: settings.admitBatchMax, maxInFlight: settings.admitBatchesInFlight };
  return { admissions: new GroupCommit((items) => retryingTransactionFailures(() => admitJobs(pool, items)), admitting) };
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

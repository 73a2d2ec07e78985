import type pg from 'pg';
import { isDatabaseUnavailable, isRetryableTransactionFailure } from './db/sqlstate.js';
import { admitJobs, type AdmissionOutcome, type AdmitJobCommand } from './admission/admit-jobs.js';
import type { AttemptReport } from './worker-calls/attempt-report.js';
import { claimJobs, type ClaimCommand, type ClaimOutcome } from './claims/claim-jobs.js';
import { decideAttemptReports, type ReportResponse } from './worker-calls/decide-attempt-reports.js';
import type { ExecutionSettings } from './workers/register-worker.js';
import type { QuarantineReport } from './journal/job-quarantine.js';
import { RequestBatcher, type BatchBudget, type ItemOutcome, type RequestBatcherOptions } from '@docket/service-kit';
import { withStatementBudget } from './db/statement-budget.js';

/** How the state process groups concurrent writes into transactions. */
export interface BatchedWriteSettings {
  /** Admissions per transaction (DOCKET_ADMIT_BATCH_MAX, default 128). */
  readonly admitBatchMax: number;
  /** Admission transactions in flight per process (DOCKET_ADMIT_BATCHES_IN_FLIGHT, default 2; beyond the first, only full batches). */
  readonly admitBatchesInFlight: number;
  /** Claims per transaction (DOCKET_CLAIM_BATCH_MAX, default 32). */
  readonly claimBatchMax: number;
  /** Attempt reports (renewals, progress, checkpoints, events, outcomes) per transaction (DOCKET_REPORT_BATCH_MAX, default 128). */
  readonly reportBatchMax: number;
  /**
   * Claim transactions in flight per process (DOCKET_CLAIM_BATCHES_IN_FLIGHT, default 1): claims lock their
   * incarnation's row, so two claim batches of one process would mostly wait for each other.
   */
  readonly claimBatchesInFlight: number;
  /** Report transactions in flight per process (DOCKET_REPORT_BATCHES_IN_FLIGHT, default 1). */
  readonly reportBatchesInFlight: number;
}

/** The state process's group-committed write paths. */
export interface BatchedWrites {
  readonly admissions: RequestBatcher<AdmitJobCommand, AdmissionOutcome>;
  readonly claims: RequestBatcher<ClaimCommand, ClaimOutcome>;
  readonly reports: RequestBatcher<AttemptReport, ReportResponse>;
}

/** How often a batch that hit a deadlock or serialization failure is decided afresh. */
const TRANSACTION_ATTEMPTS = 3;

/** Builds the group commits of one state process over its pool. */
export function batchedWrites(
  pool: pg.Pool,
  settings: BatchedWriteSettings,
  execution: ExecutionSettings,
  onBatch: (path: keyof BatchedWrites, size: number) => void = () => {},
  reportQuarantine: QuarantineReport = () => {},
): BatchedWrites {
  // Each batch is observed, and its transactions' statements may run only as long as its latest caller still waits.
  const observed =
    <Item, Result>(path: keyof BatchedWrites, decide: (items: readonly Item[]) => Promise<readonly ItemOutcome<Result>[]>) =>
    (items: readonly Item[], budget: BatchBudget) => {
      onBatch(path, items.length);
      return withStatementBudget(budget.timeoutMs, () => decide(items));
    };
  const batches = (maxBatch: number, maxInFlight: number): RequestBatcherOptions => ({ maxBatch, maxInFlight });
  return {
    admissions: new RequestBatcher(
      observed('admissions', isolatingFailures((items: readonly AdmitJobCommand[]) => admitJobs(pool, items))),
      batches(settings.admitBatchMax, settings.admitBatchesInFlight),
    ),
    claims: new RequestBatcher(
      observed('claims', isolatingFailures((items: readonly ClaimCommand[]) => claimJobs(pool, execution, items, reportQuarantine))),
      batches(settings.claimBatchMax, settings.claimBatchesInFlight),
    ),
    reports: new RequestBatcher(
      observed('reports', isolatingFailures((items: readonly AttemptReport[]) => decideAttemptReports(pool, execution, items))),
      batches(settings.reportBatchMax, settings.reportBatchesInFlight),
    ),
  };
}

/**
 * Wraps a batch's transaction so that one item cannot fail its neighbours.
 * A deadlock or serialization failure decides the batch again from scratch
 * (nothing of the failed attempt was committed). Any other failure of a
 * batch of several items (an item the database refuses for a reason the
 * checks before it did not foresee) splits the batch in halves, each
 * decided in its own transaction, down to the item that fails alone. When
 * the database is unavailable, splitting cannot help: every item of that
 * transaction gets the error, and none of them was acknowledged. It never
 * throws: once a half has committed, its items keep their answers whatever
 * happens to the other half. Every write
 * path is idempotent (keys, operation ids), so deciding an item again is
 * safe even when a lost connection left it unknown whether a COMMIT landed.
 */
export function isolatingFailures<Item, Result>(
  decide: (items: readonly Item[]) => Promise<ItemOutcome<Result>[]>,
): (items: readonly Item[]) => Promise<ItemOutcome<Result>[]> {
  const isolated = async (items: readonly Item[]): Promise<ItemOutcome<Result>[]> => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await decide(items);
      } catch (error) {
        if (isRetryableTransactionFailure(error) && attempt < TRANSACTION_ATTEMPTS) continue;
        if (items.length <= 1 || isDatabaseUnavailable(error) || isRetryableTransactionFailure(error)) {
          return items.map(() => ({ ok: false, error }));
        }
        const half = Math.ceil(items.length / 2);
        return [...(await isolated(items.slice(0, half))), ...(await isolated(items.slice(half)))];
      }
    }
  };
  return isolated;
}

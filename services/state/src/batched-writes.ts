import type pg from 'pg';
import { isDatabaseUnavailable, isRetryableTransactionFailure } from './db/sqlstate.js';
import { admitJobs, type AdmissionOutcome, type AdmitJobCommand } from './admission/admit-jobs.js';
import type { AttemptReport } from './worker-calls/attempt-report.js';
import type { ClaimCommand, ClaimOutcome } from './claims/claim-jobs.js';
import type { ReportResponse } from './worker-calls/decide-attempt-reports.js';
import { decideWorkerBatch, type WorkerWrite, type WorkerWriteResult } from './worker-calls/decide-worker-batch.js';
import type { ExecutionSettings } from './workers/register-worker.js';
import type { QuarantineReport } from './journal/job-quarantine.js';
import { RequestBatcher, type BatchBudget, type ItemOutcome, type RequestBatcherOptions, type SubmitOptions } from '@docket/service-kit';
import { withStatementBudget } from './db/statement-budget.js';

/** How the state process groups concurrent writes into transactions. */
export interface BatchedWriteSettings {
  /** Admissions per transaction (DOCKET_ADMIT_BATCH_MAX, default 128). */
  readonly admitBatchMax: number;
  /** Admission transactions in flight per process (DOCKET_ADMIT_BATCHES_IN_FLIGHT, default 2; beyond the first, only full batches). */
  readonly admitBatchesInFlight: number;
  /** Claims per worker transaction (DOCKET_CLAIM_BATCH_MAX, default 32). */
  readonly claimBatchMax: number;
  /** Attempt reports (renewals, progress, checkpoints, events, outcomes) per worker transaction (DOCKET_REPORT_BATCH_MAX, default 128). */
  readonly reportBatchMax: number;
  /**
   * Worker transactions (claims and reports together) in flight per process (DOCKET_WORKER_BATCHES_IN_FLIGHT,
   * default 2): beside a running one, another starts when it is full, or with the waiting calls of a kind
   * (claims, reports) that no running one carries, so neither kind waits behind a transaction of the other alone.
   */
  readonly workerBatchesInFlight: number;
}

/** The state process's group-committed write paths. */
export interface BatchedWrites {
  readonly admissions: RequestBatcher<AdmitJobCommand, AdmissionOutcome>;
  /** A claim, decided in the process's next worker batch (`decideWorkerBatch`). */
  claim(command: ClaimCommand, options?: SubmitOptions): Promise<ClaimOutcome>;
  /** An attempt-scoped report, decided in the process's next worker batch, beside the claims. */
  report(report: AttemptReport, options?: SubmitOptions): Promise<ReportResponse>;
}

/** What a batch's metric counts: admissions, or the claims and the reports of a worker batch. */
export type WritePath = 'admissions' | 'claims' | 'reports';

/** How often a batch that hit a deadlock or serialization failure is decided afresh. */
const TRANSACTION_ATTEMPTS = 3;

/**
 * Builds the group commits of one state process over its pool: admissions,
 * and worker batches, where the claims and the attempt reports that
 * arrive together share one transaction. A worker batch holds at most
 * `claimBatchMax` claims and `reportBatchMax` reports; past either, the
 * calls taken together are decided in consecutive transactions.
 */
export function batchedWrites(
  pool: pg.Pool,
  settings: BatchedWriteSettings,
  execution: ExecutionSettings,
  onBatch: (path: WritePath, size: number) => void = () => {},
  reportQuarantine: QuarantineReport = () => {},
): BatchedWrites {
  const batches = <Item>(maxBatch: number, maxInFlight: number): RequestBatcherOptions<Item> => ({ maxBatch, maxInFlight });
  const admitted = isolatingFailures((items: readonly AdmitJobCommand[]) => admitJobs(pool, items));
  const decided = isolatingFailures((items: readonly WorkerWrite[]) => decideWorkerBatch(pool, execution, items, reportQuarantine));
  // Each transaction is observed, and its statements may run only as long as its batch's latest caller still waits.
  const workerBatch = (items: readonly WorkerWrite[], budget: BatchBudget) =>
    withStatementBudget(budget.timeoutMs, async () => {
      const outcomes: ItemOutcome<WorkerWriteResult>[] = [];
      for (const part of withinLimits(items, settings)) {
        const claims = part.filter((item) => 'claim' in item).length;
        if (claims > 0) onBatch('claims', claims);
        if (claims < part.length) onBatch('reports', part.length - claims);
        outcomes.push(...(await decided(part)));
      }
      return outcomes;
    });
  const workerCalls = new RequestBatcher<WorkerWrite, WorkerWriteResult>(workerBatch, {
    ...batches<WorkerWrite>(settings.claimBatchMax + settings.reportBatchMax, settings.workerBatchesInFlight),
    startsBeside: kindNotRunning,
  });
  return {
    admissions: new RequestBatcher(
      (items: readonly AdmitJobCommand[], budget: BatchBudget) => {
        onBatch('admissions', items.length);
        return withStatementBudget(budget.timeoutMs, () => admitted(items));
      },
      batches(settings.admitBatchMax, settings.admitBatchesInFlight),
    ),
    claim: (command, options) => workerCalls.submit({ claim: command }, options) as Promise<ClaimOutcome>,
    report: (report, options) => workerCalls.submit({ report }, options) as Promise<ReportResponse>,
  };
}

/**
 * Which waiting worker calls may go beside the running batches: the claims
 * when no running batch has claims, else the reports when none has
 * reports, so neither kind waits behind a transaction of the other alone,
 * as when each kind had transactions of its own; what waits while nothing
 * runs goes together. A batch with claims holds its incarnations' rows,
 * so claims never go beside one.
 */
function kindNotRunning(running: readonly (readonly WorkerWrite[])[]): ((item: WorkerWrite) => boolean) | undefined {
  if (!running.some((batch) => batch.some((item) => 'claim' in item))) return (item) => 'claim' in item;
  if (!running.some((batch) => batch.some((item) => 'report' in item))) return (item) => 'report' in item;
  return undefined;
}

/** `items` in order, cut into parts of at most `claimBatchMax` claims and `reportBatchMax` reports each. */
function withinLimits(items: readonly WorkerWrite[], settings: BatchedWriteSettings): WorkerWrite[][] {
  const parts: WorkerWrite[][] = [];
  let part: WorkerWrite[] = [];
  let claims = 0;
  for (const item of items) {
    const claim = 'claim' in item;
    if ((claim ? claims >= settings.claimBatchMax : part.length - claims >= settings.reportBatchMax) && part.length > 0) {
      parts.push(part);
      part = [];
      claims = 0;
    }
    part.push(item);
    if (claim) claims += 1;
  }
  if (part.length > 0) parts.push(part);
  return parts;
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

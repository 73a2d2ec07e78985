import type pg from 'pg';
import { DocketError, isDocketError } from '@docket/contracts';
import type { ItemOutcome } from '@docket/service-kit';
import { inWriteTransaction, jointOpening } from '../db/write-transaction.js';
import { recordQuarantines } from '../db/queries/quarantine.js';
import { JobWriteSet } from '../transitions/job-write-set.js';
import { writeDecidedBatch } from '../transitions/write-decided-batch.js';
import { CLAIM_TASK, claimOpening, decideClaims, type ClaimCommand, type ClaimOutcome } from '../claims/claim-jobs.js';
import { freedSlots, NO_FREED_SLOTS } from '../claims/freed-slots.js';
import type { QuarantineEntry, QuarantineReport } from '../journal/job-quarantine.js';
import type { ExecutionSettings } from '../workers/register-worker.js';
import type { AttemptReport } from './attempt-report.js';
import { decideAttemptReports, reportOpening, type ReportResponse } from './decide-attempt-reports.js';

/** One call of a worker batch: a claim, or an attempt-scoped report (renewal, progress, checkpoint, events, outcome, ...). */
export type WorkerWrite = { readonly claim: ClaimCommand } | { readonly report: AttemptReport };

/** A worker batch's answer to one call: a claim's outcome, or a report's response. */
export type WorkerWriteResult = ClaimOutcome | ReportResponse;

/**
 * How many times one batch is decided again because a job a claim took
 * turned out to have a corrupt journal (each time that job is quarantined
 * and skipped). Past it the batch is answered UNAVAILABLE, which callers
 * retry with the same operation id, and the next try goes on.
 */
const CORRUPT_JOURNAL_ROUNDS = 8;

/**
 * Decides a batch of worker calls, claims and attempt reports alike, in
 * one transaction with a fixed number of round trips whatever the number
 * of calls or jobs (three in the common case: the opening reads of both
 * kinds travel with BEGIN, the claims' candidates are read, the write
 * travels with COMMIT), so a worker that reports some jobs and claims
 * others while its reports are in flight pays for one transaction, not
 * two. The reports are decided first (`decideAttemptReports`), then the
 * claims (`decideClaims`), counting the slots those reports give up
 * (`freedSlots`) and never taking a job they changed; everything is
 * written by one statement (`writeDecidedBatch`). The opening locks the
 * claims' incarnations before the reports' jobs, the order every claim
 * and registration takes them in.
 *
 * A claim never fails for one bad job: a job it took whose journal head
 * turns out not to be the one stored (the check the write makes, which
 * rolls the batch back) is quarantined in a transaction of its own and the
 * batch is decided again without it; it is never a candidate again, and
 * `reportQuarantine` hears of it once. A report on such a job fails the
 * batch, which `isolatingFailures` splits until that report fails alone
 * (JOURNAL_CORRUPT), as every other failure the checks did not foresee.
 */
export async function decideWorkerBatch(
  pool: pg.Pool,
  settings: ExecutionSettings,
  items: readonly WorkerWrite[],
  reportQuarantine: QuarantineReport = () => {},
): Promise<ItemOutcome<WorkerWriteResult>[]> {
  const claims = items.flatMap((item) => ('claim' in item ? [item.claim] : []));
  const reports = items.flatMap((item) => ('report' in item ? [item.report] : []));
  for (let round = 1; ; round += 1) {
    let decided: DecidedBatch;
    try {
      decided = await decideOnce(pool, settings, claims, reports);
    } catch (error) {
      if (!(error instanceof ClaimedCorruptJournal)) throw error;
      const entry = { jobId: error.jobId, task: CLAIM_TASK, errorClass: 'JOURNAL_CORRUPT' };
      const recorded = await inWriteTransaction(pool, (client) => recordQuarantines(client, [entry]));
      if (recorded.has(error.jobId)) reportQuarantine(entry);
      if (round >= CORRUPT_JOURNAL_ROUNDS) throw new DocketError('UNAVAILABLE', 'the claim met corrupt jobs and skipped them; retry it');
      continue;
    }
    for (const entry of decided.quarantined) reportQuarantine(entry);
    const claimed = decided.claims[Symbol.iterator]();
    const reported = decided.reports[Symbol.iterator]();
    return items.map((item) => ('claim' in item ? claimed.next().value : reported.next().value) as ItemOutcome<WorkerWriteResult>);
  }
}

/** One decided and committed worker batch, and the jobs its claims quarantined (newly). */
interface DecidedBatch {
  readonly claims: readonly ItemOutcome<ClaimOutcome>[];
  readonly reports: readonly ItemOutcome<ReportResponse>[];
  readonly quarantined: readonly QuarantineEntry[];
}

/** A JOURNAL_CORRUPT refusal of a batch's write, for a job one of its claims took. */
class ClaimedCorruptJournal extends Error {
  constructor(readonly jobId: string) {
    super('a claimed job has a corrupt journal');
  }
}

async function decideOnce(pool: pg.Pool, settings: ExecutionSettings, claims: readonly ClaimCommand[], reports: readonly AttemptReport[]): Promise<DecidedBatch> {
  const opening = jointOpening(claims.length > 0 ? claimOpening(claims) : undefined, reports.length > 0 ? reportOpening(reports) : undefined);
  return inWriteTransaction(
    pool,
    async (client, now, clockNow, { first: claimContext, second: reportContext }) => {
      const writes = new JobWriteSet();
      const reported = reportContext ? await decideAttemptReports(client, settings, reports, reportContext, now, clockNow, writes) : [];
      const freed = reportContext ? freedSlots(reportContext.jobs.values(), writes) : NO_FREED_SLOTS;
      const claimed = claimContext ? await decideClaims(client, settings, claims, claimContext, now, writes, freed) : { outcomes: [], quarantined: [] };
      try {
        await writeDecidedBatch(client, writes, now);
      } catch (error) {
        const jobId = corruptJournalOf(error);
        if (jobId !== undefined && !reportContext?.jobs.has(jobId)) throw new ClaimedCorruptJournal(jobId);
        throw error;
      }
      return { claims: claimed.outcomes, reports: reported, quarantined: claimed.quarantined };
    },
    { opening },
  );
}

/** The job a JOURNAL_CORRUPT failure names, if `error` is one. */
function corruptJournalOf(error: unknown): string | undefined {
  if (!isDocketError(error) || error.reason !== 'JOURNAL_CORRUPT') return undefined;
  return error.metadata['job_id'];
}

import type { MessageShape } from '@bufbuild/protobuf';
import type pg from 'pg';
import { operationKeyOf, reportContextOpening, type ReportContext } from '../db/queries/worker-call-reads.js';
import type { Opening } from '../db/write-transaction.js';
import { checkAuthority, staleIncarnation } from '../attempts/attempt-authority.js';
import { recordOperation, type AttemptReport, type ReportReads } from './attempt-report.js';
import { readEffects, type EffectKey } from '../db/queries/effects.js';
import { readOutstandingSignals } from '../db/queries/signals.js';
import type { JobRow } from '../db/queries/jobs.js';
import type { ItemOutcome } from '@docket/service-kit';
import type { JobWriteSet } from '../transitions/job-write-set.js';
import type { ExecutionSettings } from '../workers/register-worker.js';
import { replayOperation } from './worker-operation.js';

/** A decided report: the public response of its RPC. */
export type ReportResponse = MessageShape<AttemptReport['responseSchema']>;

/**
 * The opening read of a batch's attempt reports, which travels with BEGIN
 * (`inWriteTransaction`): the responses recorded for their operation ids,
 * their incarnations (marked seen) and the jobs of the attempts they name,
 * locked in id order (`reportContextOpening`).
 */
export function reportOpening(reports: readonly AttemptReport[]): Opening<ReportContext> {
  return reportContextOpening(
    reports.map(operationKey),
    reports.map((report) => report.incarnation),
    reports.flatMap((report) => (report.attempt ? [report.attempt.attemptId] : [])),
  );
}

/**
 * Decides a batch's attempt-scoped worker calls (renewals, progress,
 * checkpoints, worker events, outcomes) in its open transaction, in batch
 * order, against their opening read (`reportOpening`: the recorded
 * operations and the incarnations, and the jobs of the named attempts,
 * locked): what they change goes into `writes`, which the batch writes
 * once at its end, with its COMMIT (`decideWorkerBatch`). Renewals that
 * hand out signals, and calls on effects, read once more.
 *
 * Each call gets its own answer, exactly as if it ran alone: an
 * incarnation unknown to the caller's subject is STALE_INCARNATION; a
 * recorded operation id replays (or is OPERATION_MISMATCH) before any
 * authority check; a superseded incarnation is STALE_INCARNATION; an attempt, fence,
 * incarnation or lease (by the database clock, read after the job locks
 * are held, so time spent waiting for them counts) that is not the job's
 * current authority is STALE_AUTHORITY and writes nothing; calls on the
 * same job see each other's effects in order. A refused call never affects
 * its neighbours.
 */
export async function decideAttemptReports(
  client: pg.ClientBase,
  settings: ExecutionSettings,
  reports: readonly AttemptReport[],
  context: ReportContext,
  now: Date,
  clockNow: () => Date,
  writes: JobWriteSet,
): Promise<ItemOutcome<ReportResponse>[]> {
  const recorded = context.operations;
  const byAttempt = new Map([...context.jobs.values()].flatMap((job) => (job.current_attempt_id ? [[job.current_attempt_id, job] as const] : [])));
  const reads = await readReportNeeds(client, reports, byAttempt);
  // Leases are judged now, with the job locks held: a call that waited for a lock past its lease's expiry is refused.
  const judgedAt = clockNow();
  const decidedHere = new Map<string, { rpc: string; request_digest: string; response: Buffer }>();

  return reports.map((report): ItemOutcome<ReportResponse> => {
    try {
      const found = context.incarnations.get(report.incarnation);
      const incarnation = found?.subject === report.subject ? found : undefined;
      if (!incarnation) throw staleIncarnation();
      const key = operationKeyOf(operationKey(report));
      const earlier = recorded.get(key) ?? decidedHere.get(key);
      if (earlier) return { ok: true, value: replayOperation(earlier, report.rpc, report.digest, report.responseSchema) };
      const lockedJob = report.attempt ? byAttempt.get(report.attempt.attemptId) : undefined;
      const job = checkAuthority(incarnation, report.attempt, lockedJob && writes.current(lockedJob), judgedAt);
      const response = report.perform(job, writes, now, settings, reads);
      decidedHere.set(key, recordOperation(writes, report, response, now));
      return { ok: true, value: response };
    } catch (error) {
      return { ok: false, error };
    }
  });
}

/**
 * What the batch's calls need beyond their job rows, read under the locks:
 * the outstanding signals of renewed jobs that have any (renewals hand
 * them out), and the effects the calls name (one round trip each, only
 * when needed).
 */
async function readReportNeeds(client: pg.ClientBase, reports: readonly AttemptReport[], byAttempt: ReadonlyMap<string, JobRow>): Promise<ReportReads> {
  const renewed = new Set<JobRow>();
  const ids: string[] = [];
  const keys: EffectKey[] = [];
  for (const report of reports) {
    const job = report.attempt ? byAttempt.get(report.attempt.attemptId) : undefined;
    if (!job) continue;
    if (report.case === 'renewAttempt') renewed.add(job);
    if (!report.effects) continue;
    ids.push(...report.effects.ids);
    keys.push(...report.effects.keys.map((key) => ({ job_id: job.id, idempotency_key: key })));
  }
  return { signals: await readOutstandingSignals(client, renewed), effects: await readEffects(client, ids, keys) };
}

function operationKey(report: AttemptReport): { worker_incarnation: string; operation_id: string } {
  return { worker_incarnation: report.incarnation, operation_id: report.operationId };
}


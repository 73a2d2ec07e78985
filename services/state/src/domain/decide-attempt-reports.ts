import type { MessageShape } from '@bufbuild/protobuf';
import type pg from 'pg';
import { writeJobSet } from '../db/queries/job-write-sets.js';
import { lockJobsOfAttempts, operationKeyOf, readIncarnations, readJournalHeads, readOperations } from '../db/queries/worker-call-reads.js';
import { inWriteTransaction } from '../db/write-transaction.js';
import { checkStoredHead } from './apply-transition.js';
import { checkAuthority, staleIncarnation } from './attempt-authority.js';
import { recordOperation, type AttemptReport } from './attempt-reports.js';
import type { ItemOutcome } from './group-commit.js';
import { JobWriteSet } from './job-write-set.js';
import type { ExecutionSettings } from './register-worker.js';
import { concurrentOperation, replayOperation } from './worker-operation.js';

/** A decided report: the public response of its RPC. */
export type ReportResponse = MessageShape<AttemptReport['responseSchema']>;

/**
 * Decides a batch of attempt-scoped worker calls (renewals, progress,
 * checkpoints, worker events, outcomes) in one transaction with a fixed
 * number of round trips, whatever the batch size: the recorded operations
 * and the incarnations are read, the jobs of the named attempts locked (in
 * id order), their journal heads read, then every call is decided in
 * memory, in batch order, and everything it changed is written by one
 * statement with one NOTIFY.
 *
 * Each call gets its own answer, exactly as if it ran alone: an
 * incarnation unknown to the caller's subject is STALE_INCARNATION; a
 * recorded operation id replays (or is OPERATION_MISMATCH) before any
 * authority check; a superseded incarnation is STALE_INCARNATION; an attempt, fence,
 * incarnation or lease (by the database clock) that is not the job's
 * current authority is STALE_AUTHORITY and writes nothing; calls on the
 * same job see each other's effects in order. A refused call never affects
 * its neighbours.
 */
export async function decideAttemptReports(
  pool: pg.Pool,
  settings: ExecutionSettings,
  reports: readonly AttemptReport[],
): Promise<ItemOutcome<ReportResponse>[]> {
  return inWriteTransaction(pool, async (client, now) => {
    const recorded = await readOperations(client, reports.map(operationKey));
    const fresh = reports.filter((report) => !recorded.has(operationKeyOf(operationKey(report))));
    const incarnations = await readIncarnations(client, reports.map((report) => report.incarnation), false);
    const locked = await lockJobsOfAttempts(client, fresh.flatMap((report) => (report.attempt ? [report.attempt.attemptId] : [])));
    const byAttempt = new Map([...locked.values()].flatMap((job) => (job.current_attempt_id ? [[job.current_attempt_id, job] as const] : [])));
    const journaled = fresh.flatMap((report) => {
      const job = report.attempt && byAttempt.get(report.attempt.attemptId);
      return report.journals && job ? [job.id] : [];
    });
    const heads = await readJournalHeads(client, journaled);
    const writes = new JobWriteSet();
    const headChecked = new Set<string>();
    const decidedHere = new Map<string, { rpc: string; request_digest: string; response: Buffer }>();

    const outcomes = reports.map((report): ItemOutcome<ReportResponse> => {
      try {
        const found = incarnations.get(report.incarnation);
        const incarnation = found?.subject === report.subject ? found : undefined;
        if (!incarnation) throw staleIncarnation();
        const key = operationKeyOf(operationKey(report));
        const earlier = recorded.get(key) ?? decidedHere.get(key);
        if (earlier) return { ok: true, value: replayOperation(earlier, report.rpc, report.digest, report.responseSchema) };
        const lockedJob = report.attempt ? byAttempt.get(report.attempt.attemptId) : undefined;
        const job = checkAuthority(incarnation, report.attempt, lockedJob && writes.current(lockedJob), now);
        if (report.journals && !headChecked.has(job.id) && lockedJob) {
          checkStoredHead(lockedJob, heads.get(job.id));
          headChecked.add(job.id);
        }
        const response = report.perform(job, writes, now, settings);
        decidedHere.set(key, recordOperation(writes, report, response, now));
        return { ok: true, value: response };
      } catch (error) {
        return { ok: false, error };
      }
    });
    if (!(await writeJobSet(client, writes, now))) throw concurrentOperation();
    return outcomes;
  });
}

function operationKey(report: AttemptReport): { worker_incarnation: string; operation_id: string } {
  return { worker_incarnation: report.incarnation, operation_id: report.operationId };
}


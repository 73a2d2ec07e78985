import { create, toBinary } from '@bufbuild/protobuf';
import { SignalSchema } from '@docket/proto/docket/common/v1/signal_pb.js';
import type { Kysely } from 'kysely';
import { GENESIS_HASH } from '@docket/contracts';
import { JobSchema } from '@docket/proto/docket/common/v1/job_pb.js';
import type { ApprovalHistory } from '../db/approval-history.js';
import { transactionNow } from '../db/queries/clock.js';
import {
  JOB_DATA_TABLES,
  decidedApprovalDigests,
  deleteJobRows,
  lockNextDeletion,
  nextDeletionDue,
  redactIdempotencyResponses,
  updateDeletion,
} from '../db/queries/deletions.js';
import { recordJobChange } from '../db/queries/job-changes.js';
import { lockJob, updateJob, type JobPatch, type JobRow } from '../db/queries/jobs.js';
import type { Database } from '../db/tables/index.js';
import { projectJob } from '../reads/job-projection.js';
import type { MaintenanceStep } from './maintenance-step.js';
import { isolatingJob, type QuarantineDependencies } from '../journal/job-quarantine.js';

/** How long a BLOCKED deletion waits before the runner looks at its dependency again. */
const BLOCKED_RECHECK_MS = 5_000;

/** What the deletion runner needs besides the job tables. */
export interface DeletionDependencies extends QuarantineDependencies {
  readonly approvals: ApprovalHistory;
}

/**
 * One step of the deletion runner (SPEC section 8), in one transaction
 * on one deletion taken with SKIP LOCKED (so every replica may run it):
 *
 * 1. Dependencies first: a job whose journal holds approval decisions keeps
 *    their burned digests in the approval history, which must be reachable
 *    and must hold every one of them before the journal is erased (after
 *    that nothing could tell). If not, the deletion is BLOCKED with a
 *    stable reason and the runner looks again every few seconds; it
 *    resumes as soon as the dependency is back.
 * 2. Up to `limit` rows of each of the job's data tables go (signals,
 *    effects, attempts, feed entries, journal), no row read into memory.
 * 3. Then up to `limit` idempotency records of the job have their stored
 *    response replaced by the job's tombstone (the binding itself stays
 *    until its advertised expiry, so a replay still finds it).
 * 4. When nothing is left, the job row becomes the permanent minimal
 *    tombstone (lifecycle HARD_DELETED; id, owner, terminal status,
 *    deletion id and timestamps kept, everything else cleared), with one
 *    feed entry, and the deletion is COMPLETED.
 *
 * A crash at any point rolls back only the step in flight; the next step
 * resumes from what remains. A step that fails for a reason of the job's
 * own rolls back and quarantines the job; its deletion is skipped from
 * then on, so the other deletions proceed.
 */
export async function runDeletions(deps: DeletionDependencies, limit: number): Promise<MaintenanceStep> {
  const step = await isolatingJob(deps, 'RUN_DELETIONS', async (tx, lockedJob) => {
    const deletion = await lockNextDeletion(tx, BLOCKED_RECHECK_MS);
    if (!deletion) return 0;
    lockedJob(deletion.job_id);
    const now = await transactionNow(tx);
    const started = deletion.state === 'RUNNING' ? 0 : 1;
    const blockedBy = await missingDependency(tx, deps.approvals, deletion.job_id);
    if (blockedBy) {
      await updateDeletion(tx, deletion.id, { state: 'BLOCKED', blocked_reason: blockedBy, updated_at: now, attempt_count: deletion.attempt_count + started });
      return 1;
    }
    let erased = 0;
    for (const table of JOB_DATA_TABLES) erased += await deleteJobRows(tx, table, deletion.job_id, limit);
    const job = await lockJob(tx, deletion.job_id);
    const tombstone = tombstoneOf(job, now);
    if (erased === 0) erased = await redactResponses(tx, job, tombstone, limit);
    if (erased > 0) {
      await updateDeletion(tx, deletion.id, { state: 'RUNNING', blocked_reason: '', updated_at: now, attempt_count: deletion.attempt_count + started });
      return erased;
    }
    await updateJob(tx, job.id, tombstonePatch(tombstone));
    await recordJobChange(tx, tombstone);
    await updateDeletion(tx, deletion.id, { state: 'COMPLETED', blocked_reason: '', updated_at: now, completed_at: now, attempt_count: deletion.attempt_count + started });
    return 1;
  });
  return { handled: 'done' in step ? step.done : 0, nextDueAt: await nextDeletionDue(deps.db) };
}

/** The reason a deletion must wait, or undefined when it may proceed. Never carries backend detail. */
async function missingDependency(tx: Kysely<Database>, approvals: ApprovalHistory, jobId: string): Promise<string | undefined> {
  const digests = await decidedApprovalDigests(tx, jobId);
  if (digests.length === 0) return undefined;
  let burned: Map<string, unknown>;
  try {
    burned = await approvals.findDigests(digests);
  } catch {
    return 'APPROVAL_HISTORY_UNAVAILABLE';
  }
  return digests.every((digest) => burned.has(digest)) ? undefined : 'APPROVAL_HISTORY_INCOMPLETE';
}

/** The job as its permanent tombstone: identity, owner, terminal status, deletion and timestamps; nothing else. */
function tombstoneOf(job: JobRow, now: Date): JobRow {
  return {
    ...job,
    label: '',
    input: {},
    priority: 0,
    revision: job.revision + 1n,
    lifecycle: 'HARD_DELETED',
    run_after: null,
    progress: null,
    checkpoint: null,
    result: null,
    failure: null,
    event_count: 0n,
    head_hash: GENESIS_HASH,
    updated_at: now,
    pending_approval: null,
    last_approval: null,
    legal_hold: false,
  };
}

function tombstonePatch(tombstone: JobRow): JobPatch {
  const { label, input, priority, revision, lifecycle, run_after, progress, checkpoint, result, failure, event_count, head_hash, updated_at, pending_approval, last_approval } = tombstone;
  return { label, input, priority, revision, lifecycle, run_after, progress, checkpoint, result, failure, event_count, head_hash, updated_at, pending_approval, last_approval };
}

/**
 * Replaces the stored responses of up to `limit` of the job's idempotency
 * records, keeping each binding and its expiry: a Job response (what every
 * job-changing RPC stores) becomes the tombstone, a SendSignal response a
 * signal that names only the job, and a HardDeleteJob response (the
 * deletion, which holds no job data) stays.
 */
async function redactResponses(tx: Kysely<Database>, job: JobRow, tombstone: JobRow, limit: number): Promise<number> {
  const asJob = Buffer.from(toBinary(JobSchema, projectJob(tombstone)));
  const asSignal = Buffer.from(toBinary(SignalSchema, create(SignalSchema, { jobId: job.id })));
  return redactIdempotencyResponses(tx, job.id, { job: asJob, signal: asSignal }, limit);
}

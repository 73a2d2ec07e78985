import type { Kysely } from 'kysely';
import { DocketError, notFound, validateEventBatch, type JobStatusName } from '@docket/contracts';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import type { Database } from '../db/tables/index.js';
import { transactionNow } from '../db/queries/clock.js';
import { lockVisibleJob, type JobRow, type Viewer } from '../db/queries/jobs.js';
import { applyTransition } from './apply-transition.js';
import type { NewEvent } from '../journal/chain-events.js';
import { projectJob } from '../reads/job-projection.js';

/** One change of one job, as the internal TransitionJob RPC asks for it. */
export interface TransitionCommand {
  readonly viewer: Viewer;
  readonly jobId: string;
  readonly expectedRevision: bigint | undefined;
  /** The new status; undefined journals events without a status change. */
  readonly toStatus: JobStatusName | undefined;
  readonly events: readonly NewEvent[];
}

/** The committed change. */
export interface TransitionOutcome {
  readonly job: Job;
  readonly firstSequence: bigint;
  readonly lastSequence: bigint;
}

/**
 * Locks a visible job and checks an expected revision: the common first
 * step of every change of an existing job.
 */
export async function lockJobForChange(
  tx: Kysely<Database>,
  viewer: Viewer,
  jobId: string,
  expectedRevision: bigint | undefined,
): Promise<JobRow> {
  const job = await lockVisibleJob(tx, viewer, jobId);
  if (!job) throw notFound('job');
  if (expectedRevision !== undefined && job.revision !== expectedRevision) {
    throw new DocketError('REVISION_MISMATCH', 'the job has changed since the expected revision', {
      metadata: { revision: job.revision.toString() },
    });
  }
  return job;
}

/**
 * TransitionJob: {@link applyTransition} on a visible job, under its row
 * lock, with an optional expected revision. Limits are refused before the
 * transaction starts.
 */
export async function transitionJob(db: Kysely<Database>, command: TransitionCommand): Promise<TransitionOutcome> {
  validateEventBatch(command.events);
  return db.transaction().execute(async (tx) => {
    const job = await lockJobForChange(tx, command.viewer, command.jobId, command.expectedRevision);
    const applied = await applyTransition(tx, job, { toStatus: command.toStatus, events: command.events }, await transactionNow(tx));
    return { job: projectJob(applied.job), firstSequence: applied.firstSequence, lastSequence: applied.lastSequence };
  });
}

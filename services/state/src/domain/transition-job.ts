import type { Kysely } from 'kysely';
import {
  DocketError,
  assertLegalTransition,
  notFound,
  validateEventBatch,
  type JobStatusName,
} from '@docket/contracts';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import type { Database } from '../db/tables/index.js';
import { transactionNow } from '../db/queries/clock.js';
import { recordJobChange } from '../db/queries/job-changes.js';
import { insertJobEvents, readLastJobEvent } from '../db/queries/job-events.js';
import { lockVisibleJob, updateJobHead, type Viewer } from '../db/queries/jobs.js';
import { chainEvents, type NewEvent } from './chain-events.js';
import { projectJob } from './job-projection.js';
import { journalCorrupt } from './journal-verification.js';

/** One change of one job. */
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
 * Transition with events: the one way a job changes after admission (SPEC
 * section 4). Limits are refused before the transaction starts. Under the
 * job row's lock it checks the expected revision, the legal edge and that
 * the stored head still matches the journal's last event, then appends the
 * events with the next contiguous sequences, bumps the revision, moves the
 * head, records a feed entry and announces the change, in one transaction:
 * all of it commits or none of it does.
 */
export async function transitionJob(db: Kysely<Database>, command: TransitionCommand): Promise<TransitionOutcome> {
  validateEventBatch(command.events);
  return db.transaction().execute(async (tx) => {
    const job = await lockVisibleJob(tx, command.viewer, command.jobId);
    if (!job) throw notFound('job');
    if (command.expectedRevision !== undefined && BigInt(job.revision) !== command.expectedRevision) {
      throw new DocketError('REVISION_MISMATCH', 'the job has changed since the expected revision', {
        metadata: { revision: job.revision },
      });
    }
    if (command.toStatus !== undefined) assertLegalTransition(job.status, command.toStatus);
    const last = await readLastJobEvent(tx, job.id);
    if (!last || last.sequence !== job.event_count || last.hash !== job.head_hash) {
      throw journalCorrupt(job.id, BigInt(job.event_count));
    }
    const now = await transactionNow(tx);
    const chained = chainEvents(
      { jobId: job.id, requestDigest: job.request_digest, sequence: BigInt(job.event_count), hash: job.head_hash },
      command.events,
      now,
    );
    const changed = {
      ...job,
      status: command.toStatus ?? job.status,
      revision: (BigInt(job.revision) + 1n).toString(),
      event_count: chained.head.sequence.toString(),
      head_hash: chained.head.hash,
      updated_at: now,
    };
    await insertJobEvents(tx, chained.rows);
    await updateJobHead(tx, changed);
    await recordJobChange(tx, changed);
    return {
      job: projectJob(changed),
      firstSequence: BigInt(job.event_count) + 1n,
      lastSequence: chained.head.sequence,
    };
  });
}

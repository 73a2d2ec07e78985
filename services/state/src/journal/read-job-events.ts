import type { Kysely } from 'kysely';
import { DocketError, notFound } from '@docket/contracts';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { EventSchema, type Event } from '@docket/proto/docket/common/v1/event_pb.js';
import type { JobStatusName } from '@docket/contracts';
import type { Database, JsonObject } from '../db/tables/index.js';
import { readJournalWindow, type JobEventRow } from '../db/queries/job-events.js';
import type { Viewer } from '../db/queries/jobs.js';
import { verifyJournalPage } from './journal-verification.js';
import { verifyJournaledApprovals } from '../approvals/journaled-approvals.js';
import type { ApprovalHistory } from '../db/approval-history.js';

/** A verified page of a job's journal. */
export interface JournalPage {
  /** The events as stored, verified: answered as messages ({@link eventOf}) or encoded (`encodeEvents`). */
  readonly rows: JobEventRow[];
  readonly latestSequence: bigint;
  readonly status: JobStatusName;
  /** The job's submission digest, for clients that recompute hashes. */
  readonly requestDigest: string;
}

/**
 * Reads the events strictly after `afterSequence`, verified link by link
 * and against the job row's head (see `verifyJournalPage`), with the row
 * and the journal read in one statement (one snapshot, so they agree:
 * `readJournalWindow`). A cursor above the latest durable sequence is
 * OUT_OF_RANGE, reason CURSOR_BEYOND_LATEST: an unknown future position is
 * not an empty page. Every read also checks the journal's approval
 * decisions against the approval history (`verifyJournaledApprovals`).
 */
export async function readJobEvents(
  db: Kysely<Database>,
  approvals: ApprovalHistory,
  viewer: Viewer,
  jobId: string,
  afterSequence: bigint,
  pageSize: number,
): Promise<JournalPage> {
  const window = await readJournalWindow(db, viewer, jobId, afterSequence, lastSequenceOfPage(afterSequence, pageSize));
  if (!window) throw notFound('job');
  const { job } = window;
  // A hard deletion erases the journal: from HARD_DELETING on there is none to read.
  if (job.lifecycle === 'HARD_DELETING' || job.lifecycle === 'HARD_DELETED') throw notFound('journal');
  const latestSequence = job.event_count;
  if (afterSequence > latestSequence) {
    throw new DocketError('CURSOR_BEYOND_LATEST', 'after_sequence is beyond the latest event', {
      metadata: { latest_sequence: latestSequence.toString() },
    });
  }
  const page = await verifyJournalPage(job, afterSequence, window.rows, pageSize);
  await verifyJournaledApprovals(approvals, jobId, window.decided);
  return { rows: page, latestSequence, status: job.status, requestDigest: job.request_digest };
}

/** The largest sequence a journal row can hold (Postgres `bigint`). */
const SEQUENCE_MAX = 2n ** 63n - 1n;

/**
 * The last sequence a page of `pageSize` after `afterSequence` can hold,
 * kept within `bigint`: a cursor near the top of the range reads an empty
 * window (and is then beyond the latest), never a statement out of range.
 */
function lastSequenceOfPage(afterSequence: bigint, pageSize: number): bigint {
  const last = afterSequence + BigInt(pageSize);
  return last > SEQUENCE_MAX ? SEQUENCE_MAX : last;
}

/** The public form of a stored event. */
export function eventOf(row: JobEventRow): Event {
  return create(EventSchema, {
    jobId: row.job_id,
    sequence: row.sequence,
    type: row.type,
    payload: row.payload as JsonObject,
    occurredAt: timestampFromDate(row.occurred_at),
    attemptId: row.attempt_id ?? '',
    fence: row.fence ?? undefined,
    previousHash: row.previous_hash,
    hash: row.hash,
  });
}

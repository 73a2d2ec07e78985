import { setImmediate as nextTurn } from 'node:timers/promises';
import { DocketError, GENESIS_HASH, verifyChainSegment, type StoredEvent } from '@docket/contracts';
import type { JobEventRow, JournalHeadRow } from '../db/queries/job-events.js';
import type { JsonObject } from '../db/tables/index.js';

/**
 * DATA_LOSS / JOURNAL_CORRUPT naming the first broken sequence. The journal
 * is never repaired or skipped: a reader learns where it broke and nothing
 * more.
 */
export function journalCorrupt(jobId: string, sequence: bigint): DocketError {
  return new DocketError('JOURNAL_CORRUPT', 'the job journal failed verification', {
    metadata: { job_id: jobId, sequence: sequence.toString() },
  });
}

/**
 * Events verified per turn of the event loop (a page longer than this
 * yields between runs of it). A read of 2,048 events takes
 * the state service milliseconds of CPU to verify; done in one go, it
 * would also hold up every other call's I/O meanwhile, including the
 * previous read's answer, still being written to its socket, so a backlog
 * streamed through the events service would stall at each read.
 */
export const VERIFIED_PER_TURN = 128;

/**
 * Pages verified one at a time, in the order their reads arrived: pages
 * verified side by side, a run each in turn, would all finish as late as
 * the last, so a backlog read ahead would hold up the one a subscriber is
 * waiting for. One per process, like the CPU it orders.
 */
let verifying: Promise<unknown> = Promise.resolve();

/**
 * Verifies a page of stored rows: `rows` holds the page's predecessor (the
 * anchor, unless the page starts at sequence 1) followed by the page. Each
 * event is checked link by link (sequence contiguity, job id, previous hash,
 * recomputed hash); when the page reaches the journal's head, the last
 * event must also match the job row's count and head hash. Pages are
 * verified one at a time, in the order asked, each
 * {@link VERIFIED_PER_TURN} events per turn of the event loop. Rejects
 * with {@link journalCorrupt}; resolves to the page's events.
 */
export function verifyJournalPage(job: JournalHeadRow, afterSequence: bigint, rows: readonly JobEventRow[], pageSize: number): Promise<JobEventRow[]> {
  const verified = verifying.then(() => verifyInTurns(job, afterSequence, rows, pageSize));
  verifying = verified.catch(() => undefined);
  return verified;
}

async function verifyInTurns(job: JournalHeadRow, afterSequence: bigint, rows: readonly JobEventRow[], pageSize: number): Promise<JobEventRow[]> {
  const latest = job.event_count;
  let anchorHash = GENESIS_HASH;
  const page = [...rows];
  if (afterSequence > 0n) {
    const anchor = page.shift();
    if (!anchor || anchor.sequence !== afterSequence) throw journalCorrupt(job.id, afterSequence);
    anchorHash = anchor.hash;
  }
  let head = { previousHash: anchorHash, previousSequence: afterSequence };
  for (let from = 0; from < page.length; from += VERIFIED_PER_TURN) {
    // A page of one run (a live tail's read) costs no turn at all.
    if (from > 0) await nextTurn();
    const run = page.slice(from, from + VERIFIED_PER_TURN).map((row) => storedEventOf(row, job.request_digest));
    const verdict = verifyChainSegment(run, { jobId: job.id, requestDigest: job.request_digest, ...head });
    if (!verdict.ok) throw journalCorrupt(job.id, verdict.brokenSequence);
    head = { previousHash: verdict.headHash, previousSequence: verdict.lastSequence };
  }
  const expectedEnd = afterSequence + BigInt(pageSize) < latest ? afterSequence + BigInt(pageSize) : latest;
  const lastSequence = head.previousSequence;
  if (lastSequence < expectedEnd) throw journalCorrupt(job.id, lastSequence + 1n);
  if (lastSequence > latest) throw journalCorrupt(job.id, latest + 1n);
  if (lastSequence === latest && head.previousHash !== job.head_hash) throw journalCorrupt(job.id, latest);
  return page;
}

function storedEventOf(row: JobEventRow, requestDigest: string): StoredEvent {
  return {
    jobId: row.job_id,
    requestDigest,
    sequence: row.sequence,
    previousHash: row.previous_hash,
    type: row.type,
    payload: row.payload as JsonObject,
    occurredAt: row.occurred_at,
    hash: row.hash,
  };
}

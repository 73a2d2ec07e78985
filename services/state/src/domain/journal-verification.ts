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
 * Verifies a page of stored rows: `rows` holds the page's predecessor (the
 * anchor, unless the page starts at sequence 1) followed by the page. Each
 * event is checked link by link (sequence contiguity, job id, previous hash,
 * recomputed hash); when the page reaches the journal's head, the last event
 * must also match the job row's count and head hash. Throws
 * {@link journalCorrupt}; returns the page's events.
 */
export function verifyJournalPage(job: JournalHeadRow, afterSequence: bigint, rows: readonly JobEventRow[], pageSize: number): JobEventRow[] {
  const latest = BigInt(job.event_count);
  let anchorHash = GENESIS_HASH;
  const page = [...rows];
  if (afterSequence > 0n) {
    const anchor = page.shift();
    if (!anchor || BigInt(anchor.sequence) !== afterSequence) throw journalCorrupt(job.id, afterSequence);
    anchorHash = anchor.hash;
  }
  const verdict = verifyChainSegment(page.map((row) => storedEventOf(row, job.request_digest)), {
    jobId: job.id,
    requestDigest: job.request_digest,
    previousHash: anchorHash,
    previousSequence: afterSequence,
  });
  if (!verdict.ok) throw journalCorrupt(job.id, verdict.brokenSequence);
  const expectedEnd = afterSequence + BigInt(pageSize) < latest ? afterSequence + BigInt(pageSize) : latest;
  const lastSequence = page.length === 0 ? afterSequence : BigInt(page.at(-1)!.sequence);
  if (lastSequence < expectedEnd) throw journalCorrupt(job.id, lastSequence + 1n);
  if (lastSequence > latest) throw journalCorrupt(job.id, latest + 1n);
  const lastHash = page.length === 0 ? anchorHash : page.at(-1)!.hash;
  if (lastSequence === latest && lastHash !== job.head_hash) throw journalCorrupt(job.id, latest);
  return page;
}

function storedEventOf(row: JobEventRow, requestDigest: string): StoredEvent {
  return {
    jobId: row.job_id,
    requestDigest,
    sequence: BigInt(row.sequence),
    previousHash: row.previous_hash,
    type: row.type,
    payload: row.payload as JsonObject,
    occurredAt: row.occurred_at,
    hash: row.hash,
  };
}

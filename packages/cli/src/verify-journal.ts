import type { JournalEvent } from '@docket/client';
import { GENESIS_HASH, isSha256Hex, verifyChainLinks, verifyChainSegment, type ChainBreak } from '@docket/contracts';

/** One journal event as a reader receives it: the public `Event` message, decoded (`journalEventOf`). */
export type { JournalEvent };

/** One page of a job's journal, as `ReadJobEvents` returns it. */
export interface JournalPage {
  readonly events: readonly JournalEvent[];
  /** The latest durable sequence the server announced with this page. */
  readonly latestSequence: bigint;
}

/** The journal an audit expects to read. */
export interface JournalTarget {
  readonly jobId: string;
  /**
   * The request digest of the job's submission, which every event hash
   * commits to. With it, every hash is recomputed locally
   * (`verifyChainSegment`). Without it, everything else is still checked
   * (job ids, contiguity, each `previous_hash` against the hash before it,
   * hash shape, the announced latest sequence), and recomputing hashes is
   * left to the server, which does so on every read. The public API does
   * not return the digest today.
   */
  readonly requestDigest?: string;
}

/**
 * A break inside a run of events: the chain's own, plus a hash that is not
 * 64 lowercase hex (what is checked of a hash that cannot be recomputed).
 */
type SegmentBreak = ChainBreak | 'malformed_hash';

/**
 * Why a journal is not intact: a break inside the events, or one that only
 * a reader of whole pages can see.
 */
export type JournalBreakReason =
  | SegmentBreak
  /** The server announced a later sequence than it delivered, or no event at all. */
  | 'missing_events'
  /** A page held events beyond the latest sequence announced with it. */
  | 'beyond_latest'
  /** The announced latest sequence fell below what was already read. */
  | 'latest_went_back'
  /**
   * An `approval.decided` that does not decide an approval the journal
   * requested before, decides one twice, or carries no well-formed digest.
   * (That each decision's digest is burned in the approval history is
   * checked by the server on every read: `refused_by_server`.)
   */
  | 'approval_mismatch'
  /** The server itself refused the read as DATA_LOSS / JOURNAL_CORRUPT. */
  | 'refused_by_server';

/** The outcome of {@link verifyJournalPages}. */
export type JournalVerdict =
  | {
      readonly intact: true;
      readonly jobId: string;
      /** Events read and verified: 1 to the latest sequence announced when the audit started (or later). */
      readonly eventCount: bigint;
      /** The hash of the last event verified. */
      readonly headHash: string;
      /** Whether every hash was recomputed locally (only with a request digest). */
      readonly hashesRecomputed: boolean;
    }
  | {
      readonly intact: false;
      readonly jobId: string;
      /** The first sequence that is not what it should be; nothing from it on is trusted. */
      readonly brokenSequence: bigint;
      readonly why: JournalBreakReason;
      /** One line for humans, never quoting event contents. */
      readonly detail: string;
    };

type SegmentVerdict =
  | { ok: true; headHash: string; lastSequence: bigint }
  | { ok: false; brokenSequence: bigint; why: SegmentBreak };

/**
 * Audits a job's entire journal, page by page, without trusting the
 * server: every page must continue the previous one (the first from
 * sequence 1 and {@link GENESIS_HASH}), each event must belong to the job,
 * carry the next sequence and link to the hash before it, its hash must
 * recompute when the request digest is known, no page may hold events
 * beyond the latest sequence announced with it, and the reads must reach
 * the latest sequence announced by the first page. Stops at the first
 * break and names its sequence.
 *
 * `pages` is consumed lazily and abandoned (its `return()` called) as soon
 * as the verdict is known, so a reader that fetches each page after the
 * last sequence of the previous one reads nothing more than needed. Pure
 * apart from consuming `pages`; errors they throw propagate.
 */
export async function verifyJournalPages(
  target: JournalTarget,
  pages: AsyncIterable<JournalPage> | Iterable<JournalPage>,
): Promise<JournalVerdict> {
  let headHash = GENESIS_HASH;
  let lastSequence = 0n;
  let goal: bigint | undefined;
  const approvals = new ApprovalLedger();
  const broken = (brokenSequence: bigint, why: JournalBreakReason, detail: string): JournalVerdict => ({
    intact: false,
    jobId: target.jobId,
    brokenSequence,
    why,
    detail,
  });

  for await (const page of pages) {
    goal ??= page.latestSequence;
    if (page.latestSequence < lastSequence) {
      return broken(
        page.latestSequence + 1n,
        'latest_went_back',
        `the latest sequence went back to ${page.latestSequence} after ${lastSequence} events were read`,
      );
    }
    const withinLatest = page.events.slice(0, Number(page.latestSequence - lastSequence));
    const segment = verifySegment(target, withinLatest, headHash, lastSequence);
    if (!segment.ok) {
      const event = withinLatest[Number(segment.brokenSequence - lastSequence - 1n)];
      return broken(segment.brokenSequence, segment.why, describeBreak(segment.why, segment.brokenSequence, event));
    }
    if (withinLatest.length < page.events.length) {
      return broken(
        page.latestSequence + 1n,
        'beyond_latest',
        `the page holds events after the latest sequence it announces (${page.latestSequence})`,
      );
    }
    const unmatched = withinLatest.find((event) => !approvals.accepts(event));
    if (unmatched) {
      return broken(unmatched.sequence, 'approval_mismatch', `event ${unmatched.sequence} decides an approval the journal did not request, or decides it twice`);
    }
    headHash = segment.headHash;
    lastSequence = segment.lastSequence;
    if (lastSequence >= goal) break;
    if (page.events.length === 0) {
      return broken(
        lastSequence + 1n,
        'missing_events',
        `the server announced latest sequence ${page.latestSequence} but returned nothing after ${lastSequence}`,
      );
    }
  }

  if (lastSequence === 0n) {
    return broken(1n, 'missing_events', 'the journal is empty, but every job starts with job.admitted');
  }
  if (goal !== undefined && lastSequence < goal) {
    return broken(lastSequence + 1n, 'missing_events', `the pages ended after ${lastSequence} of ${goal} events`);
  }
  return {
    intact: true,
    jobId: target.jobId,
    eventCount: lastSequence,
    headHash,
    hashesRecomputed: target.requestDigest !== undefined,
  };
}

/**
 * `broken at sequence <n>: <why>` or `intact: <job_id>, <n> events, head
 * <hash>`, the line `docket verify` prints.
 */
export function formatJournalVerdict(verdict: JournalVerdict): string {
  return verdict.intact
    ? `intact: ${verdict.jobId}, ${verdict.eventCount} events, head ${verdict.headHash}`
    : `broken at sequence ${verdict.brokenSequence}: ${verdict.detail}`;
}

/**
 * The approvals a journal requested and decided so far: each
 * `approval.requested` opens one, each `approval.decided` (with a digest
 * of 64 lowercase hex) must close an open one.
 */
class ApprovalLedger {
  readonly #open = new Set<string>();
  readonly #decided = new Set<string>();

  accepts(event: JournalEvent): boolean {
    const id = event.payload['approval_id'];
    if (event.type === 'approval.requested') {
      if (typeof id !== 'string' || this.#open.has(id) || this.#decided.has(id)) return false;
      this.#open.add(id);
    } else if (event.type === 'approval.decided') {
      const digest = event.payload['digest'];
      if (typeof id !== 'string' || !this.#open.has(id) || !isSha256Hex(digest)) return false;
      this.#open.delete(id);
      this.#decided.add(id);
    }
    return true;
  }
}

function verifySegment(
  target: JournalTarget,
  events: readonly JournalEvent[],
  previousHash: string,
  previousSequence: bigint,
): SegmentVerdict {
  const { jobId, requestDigest } = target;
  return requestDigest === undefined
    ? verifyChainLinks(events, { jobId, previousHash, previousSequence })
    : verifyChainSegment(
        events.map((event) => ({ ...event, requestDigest })),
        { jobId, requestDigest, previousHash, previousSequence },
      );
}

function describeBreak(why: SegmentBreak, sequence: bigint, event: JournalEvent | undefined): string {
  switch (why) {
    case 'job_mismatch':
      return `the event there belongs to job ${event?.jobId ?? '?'}`;
    case 'sequence_gap':
      return `found sequence ${event?.sequence ?? '?'} where ${sequence} belongs (a gap or a reordering)`;
    case 'previous_hash_mismatch':
      return sequence === 1n
        ? 'previous_hash is not the genesis hash (64 zeros)'
        : `previous_hash does not match the hash of sequence ${sequence - 1n}`;
    case 'hash_mismatch':
      return 'the hash does not recompute from the event';
    case 'malformed_hash':
      return 'the hash is not 64 lowercase hex characters';
  }
}

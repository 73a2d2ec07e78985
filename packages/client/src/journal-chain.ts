import { timestampDate } from '@bufbuild/protobuf/wkt';
import { GENESIS_HASH, isSha256Hex, verifyChainLinks, verifyChainSegment, type ChainBreak, type JsonValue, type StoredEvent } from '@docket/contracts';
import type { Event } from '@docket/proto/docket/common/v1/event_pb.js';
import { DocketClientError } from './docket-client-error.js';

/** Why the client refused a journal: a break of the chain, or a hash that is not even 64 lowercase hex. */
export type JournalBreak = ChainBreak | 'malformed_hash';

/** Where a verified run of events attaches. */
export interface JournalAnchor {
  readonly jobId: string;
  /**
   * The submission's request digest (ReadJobEvents' `request_digest`),
   * with which every hash is recomputed; `undefined` when the server did
   * not send one, and then only the links are checked.
   */
  readonly requestDigest: string | undefined;
  /** The hash of the event before the first one to verify ({@link GENESIS_HASH} before sequence 1). */
  readonly previousHash: string;
  /** The sequence before the first one to verify (0 before sequence 1). */
  readonly previousSequence: bigint;
}

/**
 * A job's hash chain as a reader extends it, page by page: every event
 * must belong to the job, carry the next sequence (no gap, no duplicate,
 * no reordering), link to the hash before it, and its hash must recompute
 * from the event and the request digest (`verifyChainSegment` of
 * `@docket/contracts`, the code the services verify with). The first
 * failure throws DATA_LOSS / `JOURNAL_CORRUPT` with metadata
 * `{sequence, why, detected_by: 'client'}` and the chain accepts nothing
 * more.
 *
 * What it does not prove: that events after the last one seen exist (a
 * stream cut at the end looks like a quiet job), that the anchor itself
 * is genuine when verification starts after sequence 0, or authenticity:
 * the chain is unkeyed, so a rewrite that recomputes every hash verifies.
 */
export class JournalChain {
  readonly #jobId: string;
  readonly #requestDigest: string | undefined;
  #headHash: string;
  #lastSequence: bigint;
  #broken = false;

  constructor(anchor: JournalAnchor) {
    this.#jobId = anchor.jobId;
    this.#requestDigest = isSha256Hex(anchor.requestDigest) ? anchor.requestDigest : undefined;
    this.#headHash = anchor.previousHash;
    this.#lastSequence = anchor.previousSequence;
  }

  /** The sequence of the last event accepted (the anchor's before any). */
  get lastSequence(): bigint {
    return this.#lastSequence;
  }

  /** The hash of the last event accepted (the anchor's before any). */
  get headHash(): string {
    return this.#headHash;
  }

  /** Whether hashes are recomputed (a request digest is known), not only links checked. */
  get recomputesHashes(): boolean {
    return this.#requestDigest !== undefined;
  }

  /** Verifies `events` as the continuation of the chain and extends it; throws JOURNAL_CORRUPT at the first break. */
  accept(events: readonly Event[]): void {
    if (this.#broken) throw this.#corrupt(this.#lastSequence + 1n, 'sequence_gap');
    const verdict = this.#verify(events);
    if (!verdict.ok) {
      this.#broken = true;
      throw this.#corrupt(verdict.brokenSequence, verdict.why);
    }
    this.#headHash = verdict.headHash;
    this.#lastSequence = verdict.lastSequence;
  }

  #verify(events: readonly Event[]): { ok: true; headHash: string; lastSequence: bigint } | { ok: false; brokenSequence: bigint; why: JournalBreak } {
    const requestDigest = this.#requestDigest;
    const anchor = { jobId: this.#jobId, previousHash: this.#headHash, previousSequence: this.#lastSequence };
    if (requestDigest === undefined) return verifyChainLinks(events, anchor);
    return verifyChainSegment(
      events.map((event) => storedEventOf(event, requestDigest)),
      { ...anchor, requestDigest },
    );
  }

  #corrupt(sequence: bigint, why: JournalBreak): DocketClientError {
    return DocketClientError.local('JOURNAL_CORRUPT', `journal of ${this.#jobId} is broken at sequence ${sequence}: ${why}`, {
      metadata: { job_id: this.#jobId, sequence: String(sequence), why, detected_by: 'client' },
    });
  }
}

/** A chain starting at the genesis of `jobId`'s journal. */
export function genesisAnchor(jobId: string, requestDigest: string | undefined): JournalAnchor {
  return { jobId, requestDigest, previousHash: GENESIS_HASH, previousSequence: 0n };
}

/**
 * What a public `Event` carries of its hashed view (everything but the
 * request digest, which the message does not carry), decoded: an absent
 * payload is the empty object (proto3's default), an absent `occurred_at`
 * an invalid Date, from which no hash recomputes.
 */
export interface JournalEvent {
  readonly jobId: string;
  readonly sequence: bigint;
  readonly type: string;
  readonly payload: { [k: string]: JsonValue };
  readonly occurredAt: Date;
  readonly previousHash: string;
  readonly hash: string;
}

/** The {@link JournalEvent} of a public `Event`, for readers that learn the request digest later or never. */
export function journalEventOf(event: Event): JournalEvent {
  return {
    jobId: event.jobId,
    sequence: event.sequence,
    type: event.type,
    payload: event.payload ?? {},
    occurredAt: event.occurredAt ? timestampDate(event.occurredAt) : new Date(Number.NaN),
    previousHash: event.previousHash,
    hash: event.hash,
  };
}

/**
 * The hashed view of a public `Event` ({@link journalEventOf} with the
 * request digest): what `eventChainPreimage` of `@docket/contracts`
 * takes, for readers that hash with another SHA-256 (the console's
 * SubtleCrypto check).
 */
export function storedEventOf(event: Event, requestDigest: string): StoredEvent {
  return { ...journalEventOf(event), requestDigest };
}

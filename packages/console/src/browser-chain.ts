import { storedEventOf } from '@docket/client';
import { GENESIS_HASH, eventChainPreimage, isSha256Hex } from '@docket/contracts';
import type { Event } from '@docket/proto/docket/common/v1/event_pb.js';

/** SHA-256 as 64 lowercase hex characters. */
export type Sha256Hex = (bytes: Uint8Array) => Promise<string>;

/** SHA-256 with the browser's own SubtleCrypto (`crypto.subtle.digest`). */
export const subtleSha256Hex: Sha256Hex = async (bytes) => {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('');
};

/** Where a job's chain stands in this browser. */
export type ChainState =
  | { readonly kind: 'verified'; readonly sequence: bigint }
  | { readonly kind: 'broken'; readonly sequence: bigint; readonly why: string };

/**
 * A job's hash chain checked in the browser, event by event, with the
 * definition the services use (`eventChainPreimage` of
 * `@docket/contracts`, SPEC section 6) hashed by SubtleCrypto: each event
 * belongs to the job, carries the next sequence from 1, links to the hash
 * before it (64 zeros for sequence 1), and its hash recomputes from the
 * submission's request digest. The first break is final: nothing after it
 * is trusted.
 *
 * What it proves is consistency with what this page received, not
 * authenticity: the chain is unkeyed, so a rewrite that recomputes every
 * hash verifies.
 */
export class BrowserChain {
  readonly #jobId: string;
  readonly #requestDigest: string;
  readonly #sha256: Sha256Hex;
  #head = GENESIS_HASH;
  #state: ChainState = { kind: 'verified', sequence: 0n };

  constructor(jobId: string, requestDigest: string, sha256: Sha256Hex = subtleSha256Hex) {
    this.#jobId = jobId;
    this.#requestDigest = requestDigest;
    this.#sha256 = sha256;
  }

  /** Where the chain stands: verified up to a sequence, or broken at one. */
  get state(): ChainState {
    return this.#state;
  }

  /** Checks `event` as the next link; call in sequence order, one at a time. */
  async accept(event: Event): Promise<ChainState> {
    if (this.#state.kind === 'broken') return this.#state;
    const sequence = this.#state.sequence + 1n;
    const why = await this.#findBreak(event, sequence);
    if (why !== undefined) {
      this.#state = { kind: 'broken', sequence, why };
    } else {
      this.#head = event.hash;
      this.#state = { kind: 'verified', sequence };
    }
    return this.#state;
  }

  async #findBreak(event: Event, sequence: bigint): Promise<string | undefined> {
    if (!isSha256Hex(this.#requestDigest)) return 'no request digest to recompute hashes with';
    if (event.jobId !== this.#jobId) return 'the event belongs to another job';
    if (event.sequence !== sequence) return `expected sequence ${sequence}, got ${event.sequence}`;
    if (event.previousHash !== this.#head) return 'its previous hash is not the hash before it';
    let recomputed: string;
    try {
      recomputed = await this.#sha256(eventChainPreimage(storedEventOf(event, this.#requestDigest)));
    } catch {
      return 'the event cannot be hashed';
    }
    return recomputed === event.hash ? undefined : 'its hash does not recompute';
  }
}

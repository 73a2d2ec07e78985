import { canonicalJson, type JsonValue } from './canonical-json.js';
import { isSha256Hex, sha256Hex } from './sha256.js';
import { assertWellFormed } from './well-formed.js';
import { writeUtf8 } from './utf8.js';

/** The `previous_hash` of sequence 1: 32 zero bytes as hex (SPEC §6). */
export const GENESIS_HASH = '0'.repeat(64);

/** Domain separation: no other Docket hash starts with this preimage. */
export const CHAIN_DOMAIN_TAG = 'docket.job-event.chain';

/** The preimage layout version, the byte after the tag's 0x00 separator. */
export const CHAIN_VERSION = 0x01;

/** One journal event as the chain sees it: everything the hash covers. */
export interface ChainLink {
  jobId: string;
  /** The request digest of the job's submission, the same for every event of a job. */
  requestDigest: string;
  /** Contiguous per job from 1. */
  sequence: bigint | number;
  /** The previous event's hash, or {@link GENESIS_HASH} for sequence 1. */
  previousHash: string;
  type: string;
  payload: { [k: string]: JsonValue };
  /** Hashed at millisecond precision; store it at that precision too. */
  occurredAt: Date;
}

/** A journal event with its stored hash. */
export interface StoredEvent extends ChainLink {
  hash: string;
}

/** Where a verified segment attaches: the job row, and the link before the segment. */
export interface ChainAnchor {
  jobId: string;
  requestDigest: string;
  /** The hash of the event before the segment, or {@link GENESIS_HASH} when it starts at 1. */
  previousHash: string;
  /** The sequence before the segment, 0 when it starts at 1. */
  previousSequence: bigint | number;
}

/** Why a segment failed verification. */
export type ChainBreak = 'sequence_gap' | 'job_mismatch' | 'previous_hash_mismatch' | 'hash_mismatch';

/** The outcome of {@link verifyChainSegment}. */
export type ChainVerdict =
  | { ok: true; headHash: string; lastSequence: bigint }
  | { ok: false; brokenSequence: bigint; why: ChainBreak };

const encoder = new TextEncoder();
const HEADER = Uint8Array.of(...encoder.encode(CHAIN_DOMAIN_TAG), 0x00, CHAIN_VERSION);

/**
 * `occurred_at` as hashed: RFC 3339 UTC with exactly three fractional
 * digits (`2026-11-29T10:31:25.123Z`). Throws a RangeError for an invalid
 * Date or a year outside 0000-9999, which RFC 3339 cannot write.
 *
 * The text up to the second is kept for the last second written: the
 * events of a journal page mostly share it, and appending the milliseconds
 * costs a fraction of `toISOString`.
 */
export function formatOccurredAt(d: Date): string {
  const ms = d.getTime();
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond.second) {
    const year = d.getUTCFullYear();
    if (Number.isNaN(year)) throw new RangeError('occurredAt is an invalid Date');
    if (year < 0 || year > 9999) throw new RangeError('occurredAt is outside the years 0000-9999');
    lastSecond = { second, prefix: d.toISOString().slice(0, 20) };
  }
  const fraction = ms - second * 1000;
  return `${lastSecond.prefix}${fraction < 10 ? '00' : fraction < 100 ? '0' : ''}${fraction}Z`;
}

/** The last second {@link formatOccurredAt} wrote, and its text through the decimal point. */
let lastSecond = { second: Number.NaN, prefix: '' };

/**
 * The exact bytes an event hash covers (SPEC §6): the ASCII tag, 0x00, the
 * version 0x01, then job_id, request_digest, sequence (decimal ASCII),
 * previous_hash, type and JCS `{"occurred_at", "payload"}`, each preceded by
 * its UTF-8 byte length as a 4-byte big-endian unsigned integer. Length
 * prefixes make the field boundaries unambiguous.
 *
 * Throws (TypeError or RangeError) for input that has no canonical
 * preimage: digests or hashes not in 64 lowercase hex, a sequence below 1
 * or not an integer, lone surrogates, or a payload canonicalJson refuses.
 */
export function eventChainPreimage(link: ChainLink): Uint8Array {
  // A copy of exactly the preimage, so that its `.buffer` is the preimage too.
  return writePreimage(link).slice();
}

/** `SHA-256(eventChainPreimage(link))` as 64 lowercase hex characters. */
export function computeEventHash(link: ChainLink): string {
  return (lastComputedHash = sha256Hex(writePreimage(link)));
}

/**
 * The preimage of `link`, in {@link scratch}: valid until the next call.
 * Hashing a page of the journal writes one preimage after another, so the
 * buffer is allocated once, not per event, and the fields every event of a
 * job shares (the header, job_id and request_digest) are written once per
 * job, not per event.
 */
function writePreimage(link: ChainLink): Uint8Array {
  if (link.requestDigest !== lastValidDigest) {
    if (!isSha256Hex(link.requestDigest)) throw new TypeError('requestDigest must be 64 lowercase hex characters');
    lastValidDigest = link.requestDigest;
  }
  // A hash this module computed is 64 lowercase hex: a journal's previous_hash mostly is the one just computed.
  if (link.previousHash !== lastComputedHash && !isSha256Hex(link.previousHash)) throw new TypeError('previousHash must be 64 lowercase hex characters');
  const sequence = asSequence(link.sequence);
  if (sequence === undefined || sequence < 1n) throw new RangeError('sequence must be an integer from 1');
  assertWellFormed(link.jobId, 'jobId');
  assertWellFormed(link.type, 'type');
  // JCS of `{ occurred_at, payload }`: the keys in that order, the timestamp needing no escapes.
  const body = `{"occurred_at":"${formatOccurredAt(link.occurredAt)}","payload":${canonicalJson(link.payload)}}`;
  return lengthPrefixed(link.jobId, link.requestDigest, [sequence.toString(), link.previousHash, link.type, body]);
}

/** The request digest {@link writePreimage} last found well formed: every event of a job has the same one. */
let lastValidDigest = '';

/** The hash {@link computeEventHash} returned last. */
let lastComputedHash = '';

/** `link` with its hash: how a writer seals the next event of a journal. */
export function sealEvent(link: ChainLink): StoredEvent {
  return { ...link, hash: computeEventHash(link) };
}

/**
 * Checks a run of consecutive events against the link before it. For each
 * event, in order: job id and request digest equal the anchor's
 * (`job_mismatch`), the sequence is the previous one plus 1
 * (`sequence_gap`), `previousHash` is the running head
 * (`previous_hash_mismatch`), and the hash recomputes (`hash_mismatch`,
 * also for a row that cannot be hashed at all). The first failure is
 * reported at its position's expected sequence; nothing after it is
 * trusted.
 *
 * Dropping events from the end cannot be seen here: compare `headHash` and
 * `lastSequence` with the job row's head hash and event count when the
 * segment reaches the head. And the chain is unkeyed: it proves
 * consistency, not authenticity, so a rewrite that recomputes every hash
 * from the edit onwards verifies (SPEC §6).
 */
export function verifyChainSegment(events: readonly StoredEvent[], anchor: ChainAnchor): ChainVerdict {
  return walkChain(events, anchor, (event, sequence, headHash) => {
    if (event.requestDigest !== anchor.requestDigest) return 'job_mismatch';
    return linkBreak(event, anchor.jobId, sequence, headHash) ?? (hashRecomputes(event) ? undefined : 'hash_mismatch');
  });
}

/** What {@link verifyChainLinks} reads of an event: its place in the chain, not its content. */
export type ChainLinkFields = Pick<StoredEvent, 'jobId' | 'sequence' | 'previousHash' | 'hash'>;

/** Why a run failed {@link verifyChainLinks}: a broken link, or a hash that is not 64 lowercase hex. */
export type LinkBreak = Exclude<ChainBreak, 'hash_mismatch'> | 'malformed_hash';

/** The outcome of {@link verifyChainLinks}. */
export type LinkVerdict = { ok: true; headHash: string; lastSequence: bigint } | { ok: false; brokenSequence: bigint; why: LinkBreak };

/**
 * The checks of {@link verifyChainSegment} that need no request digest,
 * for a reader that does not know it (the public `Event` does not carry
 * it): in the same order and with the same reasons, each event's job id
 * (`job_mismatch`), sequence (`sequence_gap`) and `previousHash`
 * (`previous_hash_mismatch`). A hash is checked for shape only
 * (`malformed_hash`), never recomputed: an edit of an event's content
 * that keeps its links passes, which only recomputing hashes can see.
 */
export function verifyChainLinks(events: readonly ChainLinkFields[], anchor: Omit<ChainAnchor, 'requestDigest'>): LinkVerdict {
  return walkChain(events, anchor, (event, sequence, headHash) => linkBreak(event, anchor.jobId, sequence, headHash) ?? (isSha256Hex(event.hash) ? undefined : 'malformed_hash'));
}

/**
 * Walks `events` from the anchor's link: each event must show no break
 * (`breakOf`) at the next sequence, and its hash becomes the head. The
 * first break is reported at its position's expected sequence.
 */
function walkChain<E extends ChainLinkFields, B extends string>(
  events: readonly E[],
  anchor: Pick<ChainAnchor, 'previousHash' | 'previousSequence'>,
  breakOf: (event: E, sequence: bigint, headHash: string) => B | undefined,
): { ok: true; headHash: string; lastSequence: bigint } | { ok: false; brokenSequence: bigint; why: B } {
  let headHash = anchor.previousHash;
  let sequence = toAnchorSequence(anchor.previousSequence);
  for (const event of events) {
    sequence += 1n;
    const why = breakOf(event, sequence, headHash);
    if (why !== undefined) return { ok: false, brokenSequence: sequence, why };
    headHash = event.hash;
  }
  return { ok: true, headHash, lastSequence: sequence };
}

/** The link checks every reader can make, in {@link verifyChainSegment}'s order. */
function linkBreak(event: ChainLinkFields, jobId: string, sequence: bigint, headHash: string): 'job_mismatch' | 'sequence_gap' | 'previous_hash_mismatch' | undefined {
  if (event.jobId !== jobId) return 'job_mismatch';
  if (asSequence(event.sequence) !== sequence) return 'sequence_gap';
  if (event.previousHash !== headHash) return 'previous_hash_mismatch';
  return undefined;
}

function hashRecomputes(event: StoredEvent): boolean {
  try {
    return computeEventHash(event) === event.hash;
  } catch {
    return false;
  }
}

function asSequence(value: bigint | number): bigint | undefined {
  if (typeof value === 'bigint') return value;
  return Number.isSafeInteger(value) ? BigInt(value) : undefined;
}

function toAnchorSequence(value: bigint | number): bigint {
  const sequence = asSequence(value);
  if (sequence === undefined || sequence < 0n) throw new RangeError('previousSequence must be an integer from 0');
  return sequence;
}

/** Where {@link lengthPrefixed} writes; grown (never shrunk) to the largest preimage so far. */
let scratch = new Uint8Array(4096);
let scratchView = new DataView(scratch.buffer);

/** The job whose header, job_id and request_digest {@link scratch} starts with, and where they end (0: none). */
let prefix = { jobId: '', requestDigest: '', end: 0 };

/**
 * The header, then job_id, request_digest and each of `fields`, each as a
 * 4-byte big-endian UTF-8 length and its bytes, encoded straight into
 * {@link scratch} once it holds the worst case (three bytes per UTF-16
 * unit): no encoding per field and no buffer per event, which is what
 * makes verifying a page of the journal cheap. The header, job_id and
 * request_digest stay in the scratch buffer from the last call for the
 * same job. Returns a view of the scratch buffer, valid until the next
 * call.
 */
function lengthPrefixed(jobId: string, requestDigest: string, fields: readonly string[]): Uint8Array {
  const samePrefix = prefix.end > 0 && prefix.jobId === jobId && prefix.requestDigest === requestDigest;
  let capacity = samePrefix ? prefix.end : HEADER.length + 8 + 3 * (jobId.length + requestDigest.length);
  for (const field of fields) capacity += 4 + 3 * field.length;
  if (capacity > scratch.byteLength) {
    const grown = new Uint8Array(Math.max(capacity, 2 * scratch.byteLength));
    grown.set(scratch.subarray(0, prefix.end));
    scratch = grown;
    scratchView = new DataView(scratch.buffer);
  }
  let offset = prefix.end;
  if (!samePrefix) {
    scratch.set(HEADER);
    offset = writeField(HEADER.length, jobId);
    offset = writeField(offset, requestDigest);
    prefix = { jobId, requestDigest, end: offset };
  }
  for (const field of fields) offset = writeField(offset, field);
  return scratch.subarray(0, offset);
}

/** Writes `field` at `offset` of {@link scratch} as its UTF-8 length and bytes; returns where it ends. */
function writeField(offset: number, field: string): number {
  const written = writeUtf8(field, scratch, offset + 4);
  scratchView.setUint32(offset, written);
  return offset + 4 + written;
}

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from './canonical-json.js';
import {
  CHAIN_DOMAIN_TAG,
  GENESIS_HASH,
  computeEventHash,
  eventChainPreimage,
  formatOccurredAt,
  sealEvent,
  verifyChainLinks,
  verifyChainSegment,
  type ChainAnchor,
  type ChainLink,
  type StoredEvent,
} from './event-chain.js';

const JOB_ID = 'job_k4qzc2ybme7vtx3n5w6hdfpgsa';
const DIGEST = 'ab'.repeat(32);

type Draft = Pick<ChainLink, 'type' | 'payload' | 'occurredAt'>;

/** Seals `drafts` into a valid chain that continues `anchor`; sequences as numbers where safe, if asked. */
function buildChain(anchor: ChainAnchor, drafts: readonly Draft[], numberSequences = false): StoredEvent[] {
  const events: StoredEvent[] = [];
  let previousHash = anchor.previousHash;
  let sequence = BigInt(anchor.previousSequence);
  for (const draft of drafts) {
    sequence += 1n;
    const event = sealEvent({
      jobId: anchor.jobId,
      requestDigest: anchor.requestDigest,
      sequence: numberSequences && sequence <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(sequence) : sequence,
      previousHash,
      ...draft,
    });
    events.push(event);
    previousHash = event.hash;
  }
  return events;
}

const hex64 = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'.split('')), minLength: 64, maxLength: 64 });
const draft: fc.Arbitrary<Draft> = fc.record({
  type: fc.oneof(fc.constantFrom('job.admitted', 'attempt.started', 'job.succeeded'), fc.string({ unit: 'binary' })),
  payload: fc.dictionary(fc.string({ unit: 'binary', maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<JsonValue>, {
    maxKeys: 4,
  }),
  occurredAt: fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }),
});
const anchor: fc.Arbitrary<ChainAnchor> = fc.oneof(
  fc.constant({ jobId: JOB_ID, requestDigest: DIGEST, previousHash: GENESIS_HASH, previousSequence: 0 }),
  fc.record({
    jobId: fc.constantFrom(JOB_ID, 'job_other00000'),
    requestDigest: hex64,
    previousHash: hex64,
    previousSequence: fc.oneof(fc.integer({ min: 1, max: 2 ** 40 }), fc.bigInt({ min: 1n, max: 2n ** 63n - 1n })),
  }),
);
const chain = fc
  .tuple(anchor, fc.array(draft, { minLength: 1, maxLength: 8 }), fc.boolean())
  .map(([a, drafts, asNumbers]) => ({ anchor: a, events: buildChain(a, drafts, asNumbers) }));

function flipHex(hex: string): string {
  return (hex.startsWith('0') ? '1' : '0') + hex.slice(1);
}

/** One change to one field, each guaranteed to alter the field's value. */
const MUTATIONS = {
  jobId: { why: 'job_mismatch', apply: (e: StoredEvent) => ({ ...e, jobId: `${e.jobId}x` }) },
  requestDigest: { why: 'job_mismatch', apply: (e: StoredEvent) => ({ ...e, requestDigest: flipHex(e.requestDigest) }) },
  sequence: {
    why: 'sequence_gap',
    apply: (e: StoredEvent) => ({ ...e, sequence: typeof e.sequence === 'bigint' ? e.sequence + 1n : e.sequence + 1 }),
  },
  previousHash: { why: 'previous_hash_mismatch', apply: (e: StoredEvent) => ({ ...e, previousHash: flipHex(e.previousHash) }) },
  type: { why: 'hash_mismatch', apply: (e: StoredEvent) => ({ ...e, type: `${e.type}!` }) },
  payload: { why: 'hash_mismatch', apply: (e: StoredEvent) => ({ ...e, payload: { wrapped: e.payload } }) },
  occurredAt: { why: 'hash_mismatch', apply: (e: StoredEvent) => ({ ...e, occurredAt: new Date(e.occurredAt.getTime() + 1) }) },
  hash: { why: 'hash_mismatch', apply: (e: StoredEvent) => ({ ...e, hash: flipHex(e.hash) }) },
} as const;

function sequenceAt(a: ChainAnchor, index: number): bigint {
  return BigInt(a.previousSequence) + BigInt(index) + 1n;
}

/** The preimage as SPEC §6 lays it out, built independently of the code under test. */
function referencePreimage(link: ChainLink): Buffer {
  const field = (text: string) => {
    const bytes = Buffer.from(text, 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.byteLength);
    return Buffer.concat([length, bytes]);
  };
  const body = canonicalJson({ occurred_at: link.occurredAt.toISOString(), payload: link.payload });
  return Buffer.concat([
    Buffer.from(`${CHAIN_DOMAIN_TAG}\u0000\u0001`, 'latin1'),
    ...[link.jobId, link.requestDigest, String(link.sequence), link.previousHash, link.type, body].map(field),
  ]);
}

describe('eventChainPreimage / computeEventHash', () => {
  const first: ChainLink = {
    jobId: JOB_ID,
    requestDigest: DIGEST,
    sequence: 1,
    previousHash: GENESIS_HASH,
    type: 'job.admitted',
    payload: { queue: 'default', attempt: 1, note: 'ünïcode' },
    occurredAt: new Date('2026-11-29T10:31:25.123Z'),
  };

  it('lays out tag, 0x00, version 0x01 and length-prefixed fields (golden vector)', () => {
    // Computed independently with Python (struct.pack('>I', len) + bytes); the docs quote it.
    const expected =
      '646f636b65742e6a6f622d6576656e742e636861696e0001' +
      '0000001e' + Buffer.from(JOB_ID).toString('hex') +
      '00000040' + Buffer.from(DIGEST).toString('hex') +
      '00000001' + '31' +
      '00000040' + Buffer.from(GENESIS_HASH).toString('hex') +
      '0000000c' + Buffer.from('job.admitted').toString('hex') +
      '00000067' + Buffer.from('{"occurred_at":"2026-11-29T10:31:25.123Z","payload":{"attempt":1,"note":"ünïcode","queue":"default"}}').toString('hex');
    expect(Buffer.from(eventChainPreimage(first)).toString('hex')).toBe(expected);
    expect(Buffer.from(eventChainPreimage(first).subarray(0, CHAIN_DOMAIN_TAG.length)).toString('ascii')).toBe(CHAIN_DOMAIN_TAG);
    expect(computeEventHash(first)).toBe('5175b9bfec5ff52d25afd5d213a752aa085a3ebf8cc70ed86bb194b15f55d1e1');
  });

  it('chains: the second golden event hashes over the first one’s hash', () => {
    const second: ChainLink = {
      ...first,
      sequence: 2n,
      previousHash: computeEventHash(first),
      type: 'job.succeeded',
      payload: {},
      occurredAt: new Date('2026-11-29T10:31:26Z'),
    };
    expect(computeEventHash(second)).toBe('2b7cc0e785da202d468a245bf3f5dc6f1760441594b325939a686bbf0b24155c');
  });

  it('writes any link as the tag, the version and each field’s UTF-8 after its length, whatever its characters', () => {
    fc.assert(
      fc.property(draft, fc.string({ unit: 'binary', maxLength: 40 }), fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }), hex64, (d, jobId, sequence, previousHash) => {
        const link: ChainLink = { jobId, requestDigest: DIGEST, sequence, previousHash, ...d };
        expect(Buffer.from(eventChainPreimage(link)).equals(referencePreimage(link))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('writes each of a run of links right, whether it shares the last one’s job and digest (kept in the scratch buffer) or not', () => {
    const link = fc.record({
      draft,
      jobId: fc.oneof(fc.constantFrom(JOB_ID, 'job_other00000'), fc.string({ unit: 'binary', maxLength: 40 })),
      requestDigest: fc.oneof(fc.constant(DIGEST), hex64),
    });
    fc.assert(
      fc.property(fc.array(link, { minLength: 1, maxLength: 8 }), (links) => {
        links.forEach(({ draft: d, jobId, requestDigest }, index) => {
          const written: ChainLink = { jobId, requestDigest, sequence: BigInt(index + 1), previousHash: GENESIS_HASH, ...d };
          expect(Buffer.from(eventChainPreimage(written)).equals(referencePreimage(written))).toBe(true);
        });
      }),
      { numRuns: 200 },
    );
  });

  it('keeps the job and digest it shares with the last link when a larger payload than ever grows its buffer', () => {
    // Each larger than any preimage written so far in this file, so each grows the buffer right after a link of the same job.
    for (const size of [150_000, 450_000, 1_350_000]) {
      const small = { ...first, jobId: `job_grow${size}` };
      expect(Buffer.from(eventChainPreimage(small)).equals(referencePreimage(small))).toBe(true);
      const large = { ...small, payload: { big: 'é'.repeat(size) } };
      expect(Buffer.from(eventChainPreimage(large)).equals(referencePreimage(large))).toBe(true);
    }
  });

  it('hashes a number sequence and the equal bigint sequence alike', () => {
    expect(computeEventHash({ ...first, sequence: 1n })).toBe(computeEventHash(first));
  });

  it('refuses input without a canonical preimage', () => {
    expect(() => eventChainPreimage({ ...first, requestDigest: DIGEST.toUpperCase() })).toThrow(TypeError);
    expect(() => eventChainPreimage({ ...first, previousHash: GENESIS_HASH.slice(1) })).toThrow(TypeError);
    expect(() => eventChainPreimage({ ...first, sequence: 0 })).toThrow(RangeError);
    expect(() => eventChainPreimage({ ...first, sequence: 1.5 })).toThrow(RangeError);
    expect(() => eventChainPreimage({ ...first, sequence: -1n })).toThrow(RangeError);
    expect(() => eventChainPreimage({ ...first, type: 'worker.\ud800' })).toThrow(TypeError);
    expect(() => eventChainPreimage({ ...first, payload: { n: Number.NaN } })).toThrow(TypeError);
    expect(() => eventChainPreimage({ ...first, occurredAt: new Date(Number.NaN) })).toThrow(RangeError);
  });

  it('keeps field boundaries unambiguous', () => {
    const a = computeEventHash({ ...first, jobId: 'job_abcdefgh', type: 'x.y' });
    const b = computeEventHash({ ...first, jobId: 'job_abcdefghx', type: '.y' });
    expect(a).not.toBe(b);
  });
});

describe('formatOccurredAt', () => {
  it('writes what toISOString writes for any date of the years 0000-9999, in any order, many in one second or not', () => {
    const date = fc.oneof(
      fc.date({ min: new Date('0000-01-01T00:00:00.000Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }),
      fc.integer({ min: -2_000, max: 2_000 }).map((ms) => new Date(1_764_000_000_000 + ms)),
      fc.integer({ min: -2_000, max: 2_000 }).map((ms) => new Date(ms)),
    );
    fc.assert(
      fc.property(fc.array(date, { maxLength: 20 }), (dates) => {
        for (const d of dates) expect(formatOccurredAt(d)).toBe(d.toISOString());
      }),
      { numRuns: 500 },
    );
  });

  it('writes RFC 3339 UTC with exactly millisecond precision', () => {
    expect(formatOccurredAt(new Date('2026-11-29T10:31:25.123Z'))).toBe('2026-11-29T10:31:25.123Z');
    expect(formatOccurredAt(new Date('2026-11-29T11:31:25+01:00'))).toBe('2026-11-29T10:31:25.000Z');
    expect(formatOccurredAt(new Date('0000-01-01T00:00:00Z'))).toBe('0000-01-01T00:00:00.000Z');
    expect(formatOccurredAt(new Date('9999-12-31T23:59:59.999Z'))).toBe('9999-12-31T23:59:59.999Z');
  });

  it('refuses dates RFC 3339 cannot write', () => {
    expect(() => formatOccurredAt(new Date(Number.NaN))).toThrow(RangeError);
    expect(() => formatOccurredAt(new Date('+010000-01-01T00:00:00Z'))).toThrow(RangeError);
    expect(() => formatOccurredAt(new Date('-000001-01-01T00:00:00Z'))).toThrow(RangeError);
  });
});

describe('verifyChainSegment', () => {
  it('accepts any valid chain and reports its head', () => {
    fc.assert(
      fc.property(chain, ({ anchor: a, events }) => {
        const last = events.at(-1);
        expect(verifyChainSegment(events, a)).toStrictEqual({
          ok: true,
          headHash: last?.hash,
          lastSequence: sequenceAt(a, events.length - 1),
        });
      }),
    );
  });

  it('accepts an empty segment as the anchor itself', () => {
    const a = { jobId: JOB_ID, requestDigest: DIGEST, previousHash: GENESIS_HASH, previousSequence: 0 };
    expect(verifyChainSegment([], a)).toStrictEqual({ ok: true, headHash: GENESIS_HASH, lastSequence: 0n });
  });

  it('verifies a middle segment against the event before it', () => {
    fc.assert(
      fc.property(chain, fc.nat(), ({ anchor: a, events }, cut) => {
        const at = cut % events.length;
        const before = at === 0 ? a : { ...a, previousHash: events[at - 1]?.hash ?? '', previousSequence: sequenceAt(a, at - 1) };
        expect(verifyChainSegment(events.slice(at), before).ok).toBe(true);
      }),
    );
  });

  it('detects any single-field mutation of any event, at that event', () => {
    const field = fc.constantFrom(...(Object.keys(MUTATIONS) as (keyof typeof MUTATIONS)[]));
    fc.assert(
      fc.property(chain, fc.nat(), field, ({ anchor: a, events }, pick, name) => {
        const at = pick % events.length;
        const tampered = events.map((e, i) => (i === at ? MUTATIONS[name].apply(e) : e));
        expect(verifyChainSegment(tampered, a)).toStrictEqual({
          ok: false,
          brokenSequence: sequenceAt(a, at),
          why: MUTATIONS[name].why,
        });
      }),
    );
  });

  it('detects swapped, deleted and duplicated events', () => {
    const longChain = chain.filter(({ events }) => events.length >= 2);
    fc.assert(
      fc.property(longChain, fc.nat(), fc.nat(), ({ anchor: a, events }, p, q) => {
        const i = p % (events.length - 1);
        const j = i + 1 + (q % (events.length - 1 - i));
        const swapped = events.map((e, k) => (k === i ? events[j] : k === j ? events[i] : e) as StoredEvent);
        const deleted = events.filter((_, k) => k !== i);
        const duplicated = [...events.slice(0, j), events[i] as StoredEvent, ...events.slice(j)];
        const gapAt = (index: number) => ({ ok: false, brokenSequence: sequenceAt(a, index), why: 'sequence_gap' });
        expect(verifyChainSegment(swapped, a)).toStrictEqual(gapAt(i));
        expect(verifyChainSegment(deleted, a)).toStrictEqual(gapAt(i));
        expect(verifyChainSegment(duplicated, a)).toStrictEqual(gapAt(j));
      }),
    );
  });

  it('detects an event grafted from another job', () => {
    fc.assert(
      fc.property(chain, fc.array(draft, { minLength: 8, maxLength: 8 }), fc.nat(), ({ anchor: a, events }, drafts, pick) => {
        const foreign = buildChain({ ...a, jobId: `${a.jobId}z` }, drafts);
        const at = pick % events.length;
        const grafted = events.map((e, i) => (i === at ? (foreign[i] as StoredEvent) : e));
        expect(verifyChainSegment(grafted, a)).toStrictEqual({ ok: false, brokenSequence: sequenceAt(a, at), why: 'job_mismatch' });
      }),
    );
  });

  it('reports a row that cannot be hashed as a hash mismatch instead of throwing', () => {
    const [event] = buildChain({ jobId: JOB_ID, requestDigest: DIGEST, previousHash: GENESIS_HASH, previousSequence: 0 }, [
      { type: 'job.admitted', payload: {}, occurredAt: new Date(0) },
    ]);
    const unparsable = { ...(event as StoredEvent), occurredAt: new Date(Number.NaN) };
    const a = { jobId: JOB_ID, requestDigest: DIGEST, previousHash: GENESIS_HASH, previousSequence: 0n };
    expect(verifyChainSegment([unparsable], a)).toStrictEqual({ ok: false, brokenSequence: 1n, why: 'hash_mismatch' });
  });

  it('cannot see a dropped tail by itself: the caller compares the head with the job row', () => {
    fc.assert(
      fc.property(chain, ({ anchor: a, events }) => {
        const verdict = verifyChainSegment(events.slice(0, -1), a);
        expect(verdict.ok).toBe(true);
        if (verdict.ok) {
          expect(verdict.lastSequence).toBe(sequenceAt(a, events.length - 2));
          expect(verdict.headHash).not.toBe(events.at(-1)?.hash);
        }
      }),
    );
  });

  it('is unkeyed: a rewrite that recomputes every later hash verifies', () => {
    fc.assert(
      fc.property(chain, fc.nat(), ({ anchor: a, events }, pick) => {
        const at = pick % events.length;
        const drafts = events.map(({ type, payload, occurredAt }, i) =>
          i === at ? { type, payload: { forged: true, original: payload }, occurredAt } : { type, payload, occurredAt },
        );
        const forged = buildChain(a, drafts);
        const verdict = verifyChainSegment(forged, a);
        expect(verdict.ok).toBe(true);
        if (verdict.ok) expect(verdict.headHash).not.toBe(events.at(-1)?.hash);
      }),
    );
  });
});

describe('verifyChainLinks', () => {
  it('agrees with verifyChainSegment on any valid chain and on any broken link', () => {
    const linkFields = ['jobId', 'sequence', 'previousHash'] as const;
    fc.assert(
      fc.property(chain, fc.nat(), fc.option(fc.constantFrom(...linkFields)), ({ anchor: a, events }, pick, name) => {
        const at = pick % events.length;
        const run = name === null ? events : events.map((e, i) => (i === at ? MUTATIONS[name].apply(e) : e));
        expect(verifyChainLinks(run, a)).toStrictEqual(verifyChainSegment(run, a));
      }),
    );
  });

  it('refuses a hash that is not 64 lowercase hex, and cannot see an edit that keeps the links', () => {
    fc.assert(
      fc.property(chain, fc.nat(), ({ anchor: a, events }, pick) => {
        const at = pick % events.length;
        const shouting = events.map((e, i) => (i === at ? { ...e, hash: e.hash.toUpperCase().replace(/^[0-9]/, 'A') } : e));
        expect(verifyChainLinks(shouting, a)).toStrictEqual({ ok: false, brokenSequence: sequenceAt(a, at), why: 'malformed_hash' });
        const edited = events.map((e, i) => (i === at ? MUTATIONS.payload.apply(e) : e));
        expect(verifyChainLinks(edited, a).ok).toBe(true);
      }),
    );
  });
});

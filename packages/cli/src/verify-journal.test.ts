import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GENESIS_HASH, sealEvent } from '@docket/contracts';
import { formatJournalVerdict, verifyJournalPages, type JournalEvent, type JournalPage } from './verify-journal.js';

const JOB = 'job_01jdv2x0000000000000000000';
const OTHER_JOB = 'job_01jdv2y0000000000000000000';
const DIGEST = 'ab'.repeat(32);
const OTHER_DIGEST = 'cd'.repeat(32);

/** A correctly chained journal of `count` events (or of these types after job.admitted), as the events service returns them. */
function journal(count: number, jobId = JOB, requestDigest = DIGEST, typed: readonly { type: string; payload: { [k: string]: string } }[] = []): JournalEvent[] {
  const events: JournalEvent[] = [];
  let previousHash = GENESIS_HASH;
  for (let sequence = 1n; sequence <= BigInt(count); sequence += 1n) {
    const given = typed[Number(sequence) - 2];
    const { requestDigest: _digest, sequence: _sequence, ...sealed } = sealEvent({
      jobId,
      requestDigest,
      sequence,
      previousHash,
      type: sequence === 1n ? 'job.admitted' : (given?.type ?? 'worker.step'),
      payload: given?.payload ?? { step: Number(sequence), note: `n${sequence}` },
      occurredAt: new Date(Date.UTC(2026, 10, 29, 10, 0, 0, Number(sequence))),
    });
    events.push({ ...sealed, sequence });
    previousHash = sealed.hash;
  }
  return events;
}

/**
 * Serves `rows` the way ReadJobEvents does: each page holds up to
 * `pageSize` rows with a sequence above the cursor, in stored order, and
 * announces `latest` (the job row's count). Records every cursor asked for.
 */
function* served(rows: readonly JournalEvent[], options: { pageSize?: number; latest?: bigint; cursors?: bigint[] } = {}): Generator<JournalPage> {
  const pageSize = options.pageSize ?? 256;
  const latest = options.latest ?? BigInt(rows.length);
  let after = 0n;
  for (;;) {
    options.cursors?.push(after);
    const events = rows.filter((row) => row.sequence > after).slice(0, pageSize);
    yield { events, latestSequence: latest };
    after = events.at(-1)?.sequence ?? after;
  }
}

function withoutPosition<T>(items: readonly T[], index: number): T[] {
  return items.filter((_, at) => at !== index);
}

function swapPositions<T>(items: readonly T[], index: number): T[] {
  const copy = [...items];
  [copy[index], copy[index + 1]] = [copy[index + 1]!, copy[index]!];
  return copy;
}

describe('verifyJournalPages: approvals', () => {
  const requested = { type: 'approval.requested', payload: { approval_id: 'apr_one', request_digest: DIGEST } };
  const decided = { type: 'approval.decided', payload: { approval_id: 'apr_one', decision: 'ALLOW', digest: OTHER_DIGEST } };

  it('accepts a decision of an approval the journal requested', async () => {
    const rows = journal(3, JOB, DIGEST, [requested, decided]);
    expect(await verifyJournalPages({ jobId: JOB, requestDigest: DIGEST }, served(rows))).toMatchObject({ intact: true });
  });

  it.each([
    ['a decision nothing requested', [decided], 2n],
    ['a second decision of the same approval', [requested, decided, decided], 4n],
    ['a decision without a well-formed digest', [requested, { ...decided, payload: { ...decided.payload, digest: 'AB' } }], 3n],
  ])('breaks at %s', async (_name, typed, at) => {
    const rows = journal(typed.length + 1, JOB, DIGEST, typed);
    expect(await verifyJournalPages({ jobId: JOB, requestDigest: DIGEST }, served(rows))).toMatchObject({ intact: false, why: 'approval_mismatch', brokenSequence: at });
  });
});

describe('verifyJournalPages', () => {
  it('reports an intact journal read in one page or many, with its count and head', async () => {
    const rows = journal(7);
    for (const pageSize of [1, 3, 7, 256]) {
      const cursors: bigint[] = [];
      const verdict = await verifyJournalPages({ jobId: JOB, requestDigest: DIGEST }, served(rows, { pageSize, cursors }));
      expect(verdict).toEqual({ intact: true, jobId: JOB, eventCount: 7n, headHash: rows[6]!.hash, hashesRecomputed: true });
      expect(cursors).toEqual(Array.from({ length: Math.ceil(7 / pageSize) }, (_, page) => BigInt(page * pageSize)));
    }
  });

  it('says when hashes were only checked for links, not recomputed', async () => {
    const verdict = await verifyJournalPages({ jobId: JOB }, served(journal(3)));
    expect(verdict).toMatchObject({ intact: true, eventCount: 3n, hashesRecomputed: false });
  });

  it('reads up to the latest sequence announced first, also when the journal grows meanwhile', async () => {
    const rows = journal(6);
    const pages: JournalPage[] = [
      { events: rows.slice(0, 2), latestSequence: 3n },
      { events: rows.slice(2, 4), latestSequence: 6n },
    ];
    const verdict = await verifyJournalPages({ jobId: JOB, requestDigest: DIGEST }, pages);
    expect(verdict).toMatchObject({ intact: true, eventCount: 4n, headHash: rows[3]!.hash });
  });

  it('names the edited event when a payload changed without its hash', async () => {
    const rows = journal(5);
    rows[2] = { ...rows[2]!, payload: { step: 3, note: 'edited' } };
    expect(await verifyJournalPages({ jobId: JOB, requestDigest: DIGEST }, served(rows, { pageSize: 2 }))).toEqual({
      intact: false,
      jobId: JOB,
      brokenSequence: 3n,
      why: 'hash_mismatch',
      detail: 'the hash does not recompute from the event',
    });
  });

  it('cannot see a payload edit without the request digest: recomputing is then the server\'s job', async () => {
    const rows = journal(5);
    rows[2] = { ...rows[2]!, payload: { step: 3, note: 'edited' } };
    expect(await verifyJournalPages({ jobId: JOB }, served(rows))).toMatchObject({ intact: true });
  });

  it('names the gap an interior deletion leaves', async () => {
    const verdict = await verifyJournalPages({ jobId: JOB }, served(withoutPosition(journal(5), 2)));
    expect(verdict).toMatchObject({ intact: false, brokenSequence: 3n, why: 'sequence_gap' });
    expect(formatJournalVerdict(verdict)).toBe('broken at sequence 3: found sequence 4 where 3 belongs (a gap or a reordering)');
  });

  it('names the first of two events stored in each other\'s place', async () => {
    const rows = journal(5);
    const swappedRows = swapPositions(rows, 1);
    expect(await verifyJournalPages({ jobId: JOB }, served(swappedRows, { pageSize: 1 }))).toMatchObject({
      brokenSequence: 2n,
      why: 'sequence_gap',
    });
    const swappedContents = swappedRows.map((row, index) => ({ ...row, sequence: BigInt(index + 1) }));
    const verdict = await verifyJournalPages({ jobId: JOB }, served(swappedContents));
    expect(verdict).toMatchObject({ brokenSequence: 2n, why: 'previous_hash_mismatch' });
    expect(formatJournalVerdict(verdict)).toBe('broken at sequence 2: previous_hash does not match the hash of sequence 1');
  });

  it('names an event grafted from another job, with or without its job id rewritten', async () => {
    const foreign = journal(5, OTHER_JOB, OTHER_DIGEST);
    const grafted = journal(5).map((row, index) => (index === 3 ? foreign[3]! : row));
    const verdict = await verifyJournalPages({ jobId: JOB, requestDigest: DIGEST }, served(grafted));
    expect(verdict).toMatchObject({ brokenSequence: 4n, why: 'job_mismatch' });
    expect(formatJournalVerdict(verdict)).toBe(`broken at sequence 4: the event there belongs to job ${OTHER_JOB}`);
    const relabelled = grafted.map((row) => ({ ...row, jobId: JOB }));
    expect(await verifyJournalPages({ jobId: JOB }, served(relabelled))).toMatchObject({
      brokenSequence: 4n,
      why: 'previous_hash_mismatch',
    });
  });

  it('requires the first event to follow the genesis hash', async () => {
    const rows = journal(2);
    rows[0] = { ...rows[0]!, previousHash: 'f'.repeat(64) };
    const verdict = await verifyJournalPages({ jobId: JOB }, served(rows));
    expect(formatJournalVerdict(verdict)).toBe('broken at sequence 1: previous_hash is not the genesis hash (64 zeros)');
  });

  it('refuses a hash that is not 64 lowercase hex even when it cannot recompute it', async () => {
    const rows = journal(3);
    rows[2] = { ...rows[2]!, hash: rows[2]!.hash.toUpperCase() };
    expect(await verifyJournalPages({ jobId: JOB }, served(rows))).toMatchObject({ brokenSequence: 3n, why: 'malformed_hash' });
  });

  it('refuses an event it cannot hash (no occurred_at) as a hash mismatch', async () => {
    const rows = journal(3);
    rows[1] = { ...rows[1]!, occurredAt: new Date(Number.NaN) };
    expect(await verifyJournalPages({ jobId: JOB, requestDigest: DIGEST }, served(rows))).toMatchObject({
      brokenSequence: 2n,
      why: 'hash_mismatch',
    });
  });

  it('names the first missing event when the announced latest sequence is not delivered', async () => {
    const cursors: bigint[] = [];
    const verdict = await verifyJournalPages({ jobId: JOB }, served(journal(3), { latest: 5n, pageSize: 2, cursors }));
    expect(verdict).toMatchObject({ brokenSequence: 4n, why: 'missing_events' });
    expect(formatJournalVerdict(verdict)).toBe('broken at sequence 4: the server announced latest sequence 5 but returned nothing after 3');
    expect(cursors).toEqual([0n, 2n, 3n]);
  });

  it('refuses an empty journal: every job starts with job.admitted', async () => {
    expect(await verifyJournalPages({ jobId: JOB }, served([], { latest: 0n }))).toMatchObject({
      brokenSequence: 1n,
      why: 'missing_events',
    });
    expect(await verifyJournalPages({ jobId: JOB }, [])).toMatchObject({ brokenSequence: 1n, why: 'missing_events' });
  });

  it('refuses pages that end before the announced latest sequence', async () => {
    const rows = journal(5);
    const pages = [{ events: rows.slice(0, 2), latestSequence: 5n }];
    expect(await verifyJournalPages({ jobId: JOB }, pages)).toMatchObject({ brokenSequence: 3n, why: 'missing_events' });
  });

  it('refuses events beyond the latest sequence announced with them (a lowered count)', async () => {
    const verdict = await verifyJournalPages({ jobId: JOB, requestDigest: DIGEST }, served(journal(5), { latest: 3n }));
    expect(verdict).toMatchObject({ brokenSequence: 4n, why: 'beyond_latest' });
  });

  it('names a break inside the announced range before an excess beyond it', async () => {
    const rows = journal(5);
    rows[1] = { ...rows[1]!, previousHash: GENESIS_HASH };
    expect(await verifyJournalPages({ jobId: JOB }, served(rows, { latest: 4n }))).toMatchObject({
      brokenSequence: 2n,
      why: 'previous_hash_mismatch',
    });
  });

  it('refuses a latest sequence that goes back below what was read', async () => {
    const rows = journal(5);
    const pages = [
      { events: rows.slice(0, 2), latestSequence: 5n },
      { events: [], latestSequence: 1n },
    ];
    expect(await verifyJournalPages({ jobId: JOB }, pages)).toMatchObject({ brokenSequence: 2n, why: 'latest_went_back' });
  });

  it('stops reading at the first break', async () => {
    const rows = journal(9);
    rows[1] = { ...rows[1]!, hash: '0'.repeat(64) };
    const cursors: bigint[] = [];
    await verifyJournalPages({ jobId: JOB, requestDigest: DIGEST }, served(rows, { pageSize: 3, cursors }));
    expect(cursors).toEqual([0n]);
  });

  it('passes on the reader\'s failure', async () => {
    async function* failing(): AsyncGenerator<JournalPage> {
      yield { events: journal(1), latestSequence: 2n };
      throw new Error('connection reset');
    }
    await expect(verifyJournalPages({ jobId: JOB }, failing())).rejects.toThrow('connection reset');
  });

  it('names the damaged sequence for any single deletion, swap or payload edit, whatever the page size', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 30 }),
        fc.integer({ min: 1, max: 8 }),
        fc.nat(),
        fc.constantFrom('delete', 'swap', 'edit'),
        async (count, pageSize, at, damage) => {
          const rows = journal(count);
          const index = at % (count - 1);
          const damaged =
            damage === 'delete'
              ? withoutPosition(rows, index)
              : damage === 'swap'
                ? swapPositions(rows, index)
                : rows.map((row, position) => (position === index ? { ...row, payload: { edited: true } } : row));
          const verdict = await verifyJournalPages(
            { jobId: JOB, requestDigest: DIGEST },
            served(damaged, { pageSize, latest: BigInt(count) }),
          );
          expect(verdict).toMatchObject({ intact: false, brokenSequence: BigInt(index + 1) });
        },
      ),
    );
  });
});

describe('formatJournalVerdict', () => {
  it('prints the intact line docket verify promises', () => {
    expect(
      formatJournalVerdict({ intact: true, jobId: JOB, eventCount: 12n, headHash: 'a'.repeat(64), hashesRecomputed: false }),
    ).toBe(`intact: ${JOB}, 12 events, head ${'a'.repeat(64)}`);
  });
});

import { describe, expect, it } from 'vitest';
import { GENESIS_HASH } from '@docket/contracts';
import type { JobEventRow } from '../db/queries/job-events.js';
import { queuedJobRow } from '../testing/job-row.js';
import { chainEvents } from './chain-events.js';
import { VERIFIED_PER_TURN, verifyJournalPage } from './journal-verification.js';

const at = new Date('2026-12-01T10:00:00.000Z');
const job = queuedJobRow();

/** A journal of `count` events as stored (payloads parsed, as pg returns jsonb), and its job row. */
function journal(count: number) {
  const chained = chainEvents(
    { jobId: job.id, requestDigest: job.request_digest, sequence: 0n, hash: GENESIS_HASH },
    Array.from({ length: count }, (_, index) => ({ type: index === 0 ? 'job.admitted' : `worker.step`, payload: { step: index } })),
    at,
  );
  const rows = chained.rows.map((row) => ({ ...row, payload: JSON.parse(row.payload as string) }) as unknown as JobEventRow);
  return { rows, stored: { ...job, event_count: BigInt(count), head_hash: chained.head.hash } };
}

describe('verifyJournalPage', () => {
  const { rows, stored } = journal(5);
  it.each<{ name: string; after: bigint; page: JobEventRow[]; size: number; job?: typeof stored; broken?: string }>([
    { name: 'the whole journal', after: 0n, page: rows, size: 100 },
    { name: 'a first page', after: 0n, page: rows.slice(0, 2), size: 2 },
    { name: 'a later page with its anchor', after: 2n, page: rows.slice(1, 5), size: 3 },
    { name: 'an empty page at the head', after: 5n, page: rows.slice(4), size: 10 },
    { name: 'a gap', after: 0n, page: [rows[0]!, rows[2]!, rows[3]!, rows[4]!], size: 100, broken: '2' },
    { name: 'two events swapped', after: 0n, page: [rows[0]!, rows[2]!, rows[1]!, rows[3]!, rows[4]!], size: 100, broken: '2' },
    { name: 'an edited payload', after: 0n, page: rows.map((row, index) => (index === 3 ? { ...row, payload: { step: 99 } } : row)), size: 100, broken: '4' },
    { name: 'an event grafted from another job', after: 0n, page: rows.map((row, index) => (index === 1 ? { ...row, job_id: 'job_bbbbbbbbbbbbbbbbbbbbbbbbbb' } : row)), size: 100, broken: '2' },
    { name: 'the newest events missing', after: 0n, page: rows.slice(0, 3), size: 100, broken: '4' },
    { name: 'a head the job row does not record', after: 0n, page: rows, size: 100, job: { ...stored, head_hash: GENESIS_HASH }, broken: '5' },
    { name: 'a wrong anchor', after: 2n, page: rows.slice(2, 5), size: 3, broken: '2' },
  ])('$name', async ({ after, page, size, job: row, broken }) => {
    const check = verifyJournalPage(row ?? stored, after, page, size);
    if (broken === undefined) {
      expect((await check).map((event) => event.sequence)).toEqual(page.slice(after > 0n ? 1 : 0).map((event) => event.sequence));
    } else {
      await expect(check).rejects.toMatchObject({ reason: 'JOURNAL_CORRUPT', metadata: { sequence: broken } });
    }
  });

  it('finds a break in any run of a page longer than one turn, naming its sequence', async () => {
    const long = journal(3 * VERIFIED_PER_TURN + 5);
    for (const index of [0, VERIFIED_PER_TURN - 1, VERIFIED_PER_TURN, 2 * VERIFIED_PER_TURN + 1, 3 * VERIFIED_PER_TURN + 4]) {
      const page = long.rows.map((row, at) => (at === index ? { ...row, payload: { step: -1 } } : row));
      await expect(verifyJournalPage(long.stored, 0n, page, 1000)).rejects.toMatchObject({ metadata: { sequence: String(index + 1) } });
    }
    // A page after a cursor, its runs anchored on each other.
    const after = BigInt(VERIFIED_PER_TURN);
    expect(await verifyJournalPage(long.stored, after, long.rows.slice(VERIFIED_PER_TURN - 1), 1000)).toHaveLength(2 * VERIFIED_PER_TURN + 5);
  });

  it('lets the event loop turn between runs, so the I/O of other calls goes on while a long page is verified', async () => {
    const long = journal(8 * VERIFIED_PER_TURN);
    let turns = 0;
    let counting = true;
    const count = (): void => {
      turns += 1;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    await verifyJournalPage(long.stored, 0n, long.rows, 10_000);
    counting = false;
    expect(turns).toBeGreaterThanOrEqual(7);
  });

  it('verifies pages one at a time, in the order asked: a short page asked later waits for a long one', async () => {
    const long = journal(8 * VERIFIED_PER_TURN);
    const short = journal(3);
    const finished: string[] = [];
    await Promise.all([
      verifyJournalPage(long.stored, 0n, long.rows, 10_000).then(() => finished.push('long')),
      verifyJournalPage(short.stored, 0n, short.rows, 10).then(() => finished.push('short')),
    ]);
    expect(finished).toEqual(['long', 'short']);
  });

  it('goes on with the next page after one that failed', async () => {
    const broken = verifyJournalPage(stored, 0n, rows.slice(0, 3), 100);
    const next = verifyJournalPage(stored, 0n, rows, 100);
    await expect(broken).rejects.toMatchObject({ reason: 'JOURNAL_CORRUPT' });
    expect(await next).toHaveLength(5);
  });
});

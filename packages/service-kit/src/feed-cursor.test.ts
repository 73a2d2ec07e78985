import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FeedCursorCodec, normaliseFeedFilter, type FeedCursorBinding } from './feed-cursor.js';

const UINT64_MAX = (1n << 64n) - 1n;
const position = { transactionId: 1_234_567n, entryId: 42n };
const binding: FeedCursorBinding = { subject: 'alice', filter: normaliseFeedFilter({ statuses: [2, 1], queue: 'email' }) };

const positions = fc.record({ transactionId: fc.bigInt(0n, UINT64_MAX), entryId: fc.bigInt(0n, UINT64_MAX) });
const bindings = fc.record({
  subject: fc.string({ minLength: 1, maxLength: 40 }),
  filter: fc.record({ statuses: fc.array(fc.integer({ min: 1, max: 9 }), { maxLength: 9 }), queue: fc.string({ maxLength: 20 }) }),
});

describe('FeedCursorCodec', () => {
  const codec = new FeedCursorCodec('cursor-secret', 60_000);

  it('opens what it sealed, for any uint64 position, subject and filter', () => {
    fc.assert(
      fc.property(positions, bindings, (at, bound) => {
        const normal = { subject: bound.subject, filter: normaliseFeedFilter(bound.filter) };
        expect(codec.open(codec.seal(at, normal), normal)).toEqual({ ok: true, position: at });
      }),
    );
  });

  it('binds to the filter, not to its spelling: order and duplicates of statuses do not matter', () => {
    fc.assert(
      fc.property(positions, fc.array(fc.integer({ min: 1, max: 9 }), { maxLength: 12 }), (at, statuses) => {
        const sealed = codec.seal(at, { subject: 'alice', filter: normaliseFeedFilter({ statuses, queue: 'q' }) });
        const respelled = normaliseFeedFilter({ statuses: [...statuses, ...statuses].reverse(), queue: 'q' });
        expect(codec.open(sealed, { subject: 'alice', filter: respelled })).toEqual({ ok: true, position: at });
      }),
    );
  });

  it('refuses a cursor with any single character altered as CURSOR_INVALID', () => {
    const cursor = codec.seal(position, binding);
    for (let index = 0; index < cursor.length; index += 1) {
      const altered = `${cursor.slice(0, index)}${cursor[index] === 'A' ? 'B' : 'A'}${cursor.slice(index + 1)}`;
      expect(codec.open(altered, binding)).toEqual({ ok: false, refusal: 'CURSOR_INVALID' });
    }
  });

  it('gives the same cursor again for one binding and position within a second, and a fresh one after', () => {
    let now = 10_000;
    const clocked = new FeedCursorCodec('cursor-secret', 60_000, () => now);
    const first = clocked.seal(position, binding);
    now += 999;
    expect(clocked.seal(position, { ...binding })).toBe(first);
    expect(clocked.seal({ ...position, entryId: 43n }, binding)).not.toBe(first);
    expect(clocked.seal(position, { ...binding, subject: 'bob' })).not.toBe(first);
    now += 1;
    const fresh = clocked.seal(position, binding);
    expect(fresh).not.toBe(first);
    // The reused one expires at most that second earlier than the fresh one.
    now = 10_000 + 60_000;
    expect(clocked.open(first, binding)).toEqual({ ok: true, position });
    now += 1;
    expect(clocked.open(first, binding)).toEqual({ ok: false, refusal: 'CURSOR_EXPIRED' });
    expect(clocked.open(fresh, binding)).toEqual({ ok: true, position });
  });

  it('never gives a cursor again past a tenth of a short time to live', () => {
    let now = 1_000;
    const clocked = new FeedCursorCodec('cursor-secret', 500, () => now);
    const first = clocked.seal(position, binding);
    now += 49;
    expect(clocked.seal(position, binding)).toBe(first);
    now += 1;
    expect(clocked.seal(position, binding)).not.toBe(first);
  });

  it('tells an absent, foreign, other-filter, other-secret and expired cursor apart', () => {
    let now = 1_000;
    const clocked = new FeedCursorCodec('cursor-secret', 500, () => now);
    const cursor = clocked.seal(position, binding);
    expect(clocked.open('', binding)).toEqual({ ok: false, refusal: 'CURSOR_ABSENT' });
    expect(clocked.open(cursor, { ...binding, subject: 'mallory' })).toEqual({ ok: false, refusal: 'CURSOR_FOREIGN' });
    expect(clocked.open(cursor, { ...binding, filter: { statuses: [1, 2], queue: 'sms' } })).toEqual({ ok: false, refusal: 'CURSOR_INVALID' });
    expect(clocked.open(cursor, { ...binding, filter: { statuses: [1], queue: 'email' } })).toEqual({ ok: false, refusal: 'CURSOR_INVALID' });
    expect(new FeedCursorCodec('other-secret', 500, () => now).open(cursor, binding)).toEqual({ ok: false, refusal: 'CURSOR_INVALID' });
    now = 1_500;
    expect(clocked.open(cursor, binding)).toEqual({ ok: true, position });
    now = 1_501;
    expect(clocked.open(cursor, binding)).toEqual({ ok: false, refusal: 'CURSOR_EXPIRED' });
    expect(clocked.open(cursor, { ...binding, subject: 'mallory' })).toEqual({ ok: false, refusal: 'CURSOR_FOREIGN' });
  });

  it('never opens a token of another kind sealed with the same secret, nor names the subject in clear', async () => {
    const { sealToken } = await import('@docket/contracts');
    const pageToken = sealToken({ v: 1, sub: 'alice', f: 'x', snap: '1:2:', t: 0, id: 'job_x', exp: Date.now() + 60_000 }, 'cursor-secret');
    expect(codec.open(pageToken, binding)).toEqual({ ok: false, refusal: 'CURSOR_INVALID' });
    const body = Buffer.from(codec.seal(position, binding).split('.')[0] ?? '', 'base64url').toString('utf8');
    expect(body).not.toContain('alice');
    expect(body).not.toContain('email');
  });
});

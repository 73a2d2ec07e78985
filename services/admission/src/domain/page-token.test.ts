import { describe, expect, it } from 'vitest';
import { isDocketError } from '@docket/contracts';
import { PageTokenCodec } from './page-token.js';

const position = { snapshot: '1000:1005:1001,1003', createdAt: new Date('2026-11-29T10:31:25.123Z'), jobId: 'job_abcdefgh12345678' };
const binding = { subject: 'alice', filter: { statuses: ['QUEUED'], queue: 'email', includeDeleted: false } };

function reasonOf(action: () => unknown): string | undefined {
  try {
    action();
    return undefined;
  } catch (error) {
    return isDocketError(error) ? error.reason : 'not a DocketError';
  }
}

describe('PageTokenCodec', () => {
  const codec = new PageTokenCodec('cursor-secret', 60_000);

  it('opens what it sealed, for the same subject and filter', () => {
    expect(codec.open(codec.seal(position, binding), binding)).toEqual(position);
  });

  it('refuses a token with any single bit flipped as CURSOR_INVALID', () => {
    const token = codec.seal(position, binding);
    for (let index = 0; index < token.length; index += 1) {
      const bytes = Buffer.from(token, 'latin1');
      bytes[index] = (bytes[index] ?? 0) ^ 1;
      expect(reasonOf(() => codec.open(bytes.toString('latin1'), binding))).toBe('CURSOR_INVALID');
    }
  });

  it('refuses another subject, another filter and another secret as CURSOR_INVALID', () => {
    const token = codec.seal(position, binding);
    expect(reasonOf(() => codec.open(token, { ...binding, subject: 'mallory' }))).toBe('CURSOR_INVALID');
    expect(reasonOf(() => codec.open(token, { ...binding, filter: { ...binding.filter, queue: 'sms' } }))).toBe('CURSOR_INVALID');
    expect(reasonOf(() => new PageTokenCodec('other-secret', 60_000).open(token, binding))).toBe('CURSOR_INVALID');
    expect(reasonOf(() => codec.open('', binding))).toBe('CURSOR_INVALID');
  });

  it('refuses an expired token as CURSOR_EXPIRED', () => {
    let now = 1_000;
    const clocked = new PageTokenCodec('cursor-secret', 500, () => now);
    const token = clocked.seal(position, binding);
    now = 1_400;
    expect(clocked.open(token, binding)).toEqual(position);
    now = 1_501;
    expect(reasonOf(() => clocked.open(token, binding))).toBe('CURSOR_EXPIRED');
  });
});

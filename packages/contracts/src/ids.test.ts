import { describe, expect, it } from 'vitest';
import { ID_PATTERN, ID_PREFIXES, isIdOf, isValidId, newId } from './ids.js';

describe('newId', () => {
  it.each(ID_PREFIXES)('makes %s ids of the prefix and 26 base32 characters (128 bits)', (prefix) => {
    const id = newId(prefix);
    expect(id).toMatch(new RegExp(`^${prefix}_[a-z2-7]{26}$`));
    expect(isValidId(id)).toBe(true);
    expect(isIdOf(prefix, id)).toBe(true);
  });

  it('never repeats and is not ordered', () => {
    const ids = Array.from({ length: 10_000 }, () => newId('job'));
    expect(new Set(ids).size).toBe(ids.length);
    const ascending = ids.every((id, i) => i === 0 || (ids[i - 1] ?? '') < id);
    expect(ascending).toBe(false);
  });

  it('uses every bit position: each character varies across ids', () => {
    const ids = Array.from({ length: 2_000 }, () => newId('op').slice(3));
    for (let i = 0; i < 26; i++) {
      const seen = new Set(ids.map((id) => id.charAt(i)));
      // The last character carries 3 bits plus 2 zero padding bits: 8 values.
      expect(seen.size).toBe(i === 25 ? 8 : 32);
    }
  });
});

describe('isValidId', () => {
  it('follows the SPEC shape', () => {
    expect(ID_PATTERN.source).toBe('^[A-Za-z0-9][A-Za-z0-9_-]{7,127}$');
    for (const id of ['job_abcd', 'A1234567', 'x'.repeat(128), 'legacy-Id_09']) expect(isValidId(id)).toBe(true);
  });

  it('rejects wrong lengths, leading separators, path and SQL characters, and non-strings', () => {
    const rejected = ['', 'job_abc', 'x'.repeat(129), '_job_abcd', '-job_abcd', 'job_../../etc', 'job_a b cd', "job_a';--", 'job_abcdé', 'job_abcd\n', 12345678, null];
    for (const value of rejected) expect(isValidId(value)).toBe(false);
  });
});

describe('isIdOf', () => {
  it('requires the exact prefix and separator', () => {
    const id = newId('job');
    expect(isIdOf('att', id)).toBe(false);
    expect(isIdOf('op', 'opx_abcdefgh')).toBe(false);
    expect(isIdOf('op', 'op_abcdefgh')).toBe(true);
    expect(isIdOf('job', 'jobs_abcdefgh')).toBe(false);
    expect(isIdOf('job', 'job_')).toBe(false);
    expect(isIdOf('job', undefined)).toBe(false);
  });
});

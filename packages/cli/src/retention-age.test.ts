import { create } from '@bufbuild/protobuf';
import { DurationSchema } from '@bufbuild/protobuf/wkt';
import { describe, expect, it } from 'vitest';
import { UsageError } from './command.js';
import { formatRetentionAge, parseRetentionAge } from './retention-age.js';

describe('retention ages', () => {
  it.each([
    ['45s', 45n],
    ['90m', 5_400n],
    ['12h', 43_200n],
    ['30d', 2_592_000n],
    ['007d', 604_800n],
    ['1s', 1n],
    ['3652500d', 315_576_000_000n],
  ])('reads %s as %d seconds', (text, seconds) => {
    expect(parseRetentionAge(text, '--age')).toBe(seconds);
  });

  it.each(['', '30', 'd', '1.5h', '1h30m', '30 d', ' 30d', '30d ', '30D', '2w', '-1d', '+1d', '0s', '0d', '3652501d', '1e3s'])('refuses %j as a usage error naming the flag', (text) => {
    expect(() => parseRetentionAge(text, '--soft-delete-after')).toThrow(UsageError);
    expect(() => parseRetentionAge(text, '--soft-delete-after')).toThrow(/^--soft-delete-after must be/);
  });

  it.each([
    [45n, '45s'],
    [60n, '1m'],
    [5_400n, '90m'],
    [3_600n, '1h'],
    [129_600n, '36h'],
    [86_400n, '1d'],
    [2_592_000n, '30d'],
    [86_401n, '86401s'],
  ])('writes %d seconds in the largest unit that divides them: %s', (seconds, text) => {
    expect(formatRetentionAge(create(DurationSchema, { seconds }))).toBe(text);
  });

  it('writes back every age it reads in the same unit when that unit is the largest that divides it', () => {
    for (const text of ['45s', '90m', '36h', '30d', '59s', '25h']) {
      expect(formatRetentionAge(create(DurationSchema, { seconds: parseRetentionAge(text, '--age') }))).toBe(text);
    }
  });

  it('writes an age with a fraction of a second in seconds', () => {
    expect(formatRetentionAge(create(DurationSchema, { seconds: 1n, nanos: 500_000_000 }))).toBe('1.5s');
  });
});

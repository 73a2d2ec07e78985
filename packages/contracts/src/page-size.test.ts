import { describe, expect, it } from 'vitest';
import { invalidFieldRefusal } from '../../../test/support/docket-refusal.js';
import { coerceEventPageSize, coerceListPageSize } from './page-size.js';

describe.each([
  { name: 'coerceEventPageSize', coerce: coerceEventPageSize, fallback: 100, max: 256 },
  { name: 'coerceListPageSize', coerce: coerceListPageSize, fallback: 50, max: 200 },
])('$name', ({ coerce, fallback, max }) => {
  it('uses the default for 0 and coerces oversized pages to the maximum', () => {
    expect(coerce(0)).toBe(fallback);
    expect(coerce(1)).toBe(1);
    expect(coerce(max - 1)).toBe(max - 1);
    expect(coerce(max)).toBe(max);
    expect(coerce(max + 1)).toBe(max);
    expect(coerce(2 ** 31 - 1)).toBe(max);
  });

  it('refuses negative and non-integer sizes as INVALID_FIELD on page_size', () => {
    for (const bad of [-1, -(2 ** 31), 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => coerce(bad)).toThrow(invalidFieldRefusal('page_size'));
    }
  });

  it('names the field it is given', () => {
    expect(() => coerce(-1, 'filter.page_size')).toThrow(
      expect.objectContaining({ fieldViolations: [expect.objectContaining({ field: 'filter.page_size' })] }),
    );
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonParameter } from './json-parameter.js';

describe('jsonParameter', () => {
  it('writes every bigint, however deep, as its exact decimal string, and everything else as JSON.stringify does', () => {
    const at = new Date('2026-12-01T10:00:00.000Z');
    const rows = [{ id: 'job_a', fence: 2n ** 63n - 1n, revision: 9_007_199_254_740_993n, attempt_deadline: null, at, nested: { through: [0n, 1n] }, count: 3 }];
    expect(JSON.parse(jsonParameter(rows))).toEqual([
      { id: 'job_a', fence: '9223372036854775807', revision: '9007199254740993', attempt_deadline: null, at: at.toISOString(), nested: { through: ['0', '1'] }, count: 3 },
    ]);
    expect(() => JSON.stringify(rows)).toThrow(TypeError);
    expect(jsonParameter({ input: { a: [1, 'x', true] } })).toBe(JSON.stringify({ input: { a: [1, 'x', true] } }));
  });

  it('writes the same text whichever row holds the bigint, and when none does', () => {
    const later = [{ id: 'a', n: 1 }, { id: 'b', n: 2n }];
    const first = [{ id: 'b', n: 2n }, { id: 'a', n: 1 }];
    expect(jsonParameter(later)).toBe('[{"id":"a","n":1},{"id":"b","n":"2"}]');
    expect(jsonParameter(first)).toBe('[{"id":"b","n":"2"},{"id":"a","n":1}]');
    expect(jsonParameter([{ id: 'c', deep: { n: 3n } }])).toBe('[{"id":"c","deep":{"n":"3"}}]');
    expect(jsonParameter([])).toBe('[]');
  });

  it('writes any value as JSON.stringify with a bigint-as-decimal replacer does, or refuses what it refuses', () => {
    const asDecimal = (_key: string, item: unknown): unknown => (typeof item === 'bigint' ? item.toString() : item);
    const value = fc.anything({ withBigInt: true, withDate: true, withBoxedValues: true, withSparseArray: true, withTypedArray: true, maxDepth: 3 });
    class Row {
      constructor(readonly fence: number, readonly at: Date) {}
    }
    const rows = fc.array(
      fc.oneof(fc.dictionary(fc.string({ maxLength: 6 }), value, { maxKeys: 6 }), value, fc.constant(new Row(1, new Date(0))), fc.constant({ at: new Date(Number.NaN), n: 1n })),
      { maxLength: 5 },
    );
    fc.assert(
      fc.property(fc.oneof(rows, value), (written) => {
        let expected: string | Error;
        try {
          expected = JSON.stringify(written, asDecimal);
        } catch (error) {
          expected = error as Error;
        }
        if (expected instanceof Error) expect(() => jsonParameter(written)).toThrow(expected.constructor as new () => Error);
        else expect(jsonParameter(written)).toBe(expected);
      }),
      { numRuns: 1_000 },
    );
  });

  it('refuses a cycle as JSON.stringify does, also when the value holds a bigint', () => {
    const row: Record<string, unknown> = { fence: 1n };
    row.self = row;
    expect(() => jsonParameter(row)).toThrow(/circular/i);
    expect(() => jsonParameter([row])).toThrow(/circular/i);
  });
});

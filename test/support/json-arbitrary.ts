import fc from 'fast-check';

/**
 * Any JSON value, nested a few levels (arrays of up to four items, objects
 * of up to four keys), whose strings (keys too) come from `strings` and
 * whose numbers come from `numbers`: the request fuzzers pass their hostile
 * ones (NUL, lone surrogates, NaN, infinities) to fill `Struct` and
 * `Value` fields with.
 */
export function jsonValueOf(strings: fc.Arbitrary<string>, numbers: fc.Arbitrary<number>): fc.Arbitrary<unknown> {
  return fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      strings,
      numbers,
      fc.boolean(),
      fc.constant(null),
      fc.array(tie('value'), { maxLength: 4 }),
      fc.dictionary(strings, tie('value'), { maxKeys: 4 }),
    ),
  })).value;
}

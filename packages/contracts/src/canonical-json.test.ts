import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, canonicalJsonByteLength, type JsonValue } from './canonical-json.js';

/** Any JSON value, with strings over the whole of Unicode (no lone surrogates). */
const jsonValue = fc.jsonValue({ stringUnit: 'binary', maxDepth: 4 }) as fc.Arbitrary<JsonValue>;

/** JSON.parse cannot produce -0; compare against the value it can produce. */
function withoutNegativeZero(value: JsonValue): JsonValue {
  if (typeof value === 'number') return value === 0 ? 0 : value;
  if (Array.isArray(value)) return value.map(withoutNegativeZero);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutNegativeZero(v)]));
  }
  return value;
}

/** The same data with every object's keys inserted in a seeded random order. */
function reorderKeys(value: JsonValue, seed: number): JsonValue {
  if (Array.isArray(value)) return value.map((item) => reorderKeys(item, seed));
  if (value === null || typeof value !== 'object') return value;
  let state = seed >>> 0;
  const entries = Object.entries(value)
    .map(([k, v]) => {
      state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
      return { rank: state, entry: [k, reorderKeys(v, seed)] as const };
    })
    .sort((a, b) => a.rank - b.rank);
  const out: { [k: string]: JsonValue } = {};
  for (const { entry } of entries) Object.defineProperty(out, entry[0], { value: entry[1], enumerable: true, writable: true, configurable: true });
  return out;
}

/** A double from its IEEE 754 bit pattern, as RFC 8785 Appendix B lists them. */
function fromBits(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

describe('canonicalJson (RFC 8785)', () => {
  it('serialises the RFC 8785 section 3.2.2 example', () => {
    const input = JSON.parse(String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`) as JsonValue;
    const expected = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`;
    expect(canonicalJson(input)).toBe(expected);
    expect(canonicalJsonByteLength(input)).toBe(Buffer.byteLength(expected));
  });

  it('sorts keys by UTF-16 code units (RFC 8785 section 3.2.3)', () => {
    const input = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    expect(canonicalJson(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it('sorts integer-like keys as strings, not in JavaScript property order', () => {
    expect(canonicalJson({ 10: 'a', 2: 'b', 1: 'c', b: 1, a: 2 })).toBe('{"1":"c","10":"a","2":"b","a":2,"b":1}');
  });

  it.each([
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ])('writes the double %s as %s (RFC 8785 appendix B)', (bits, text) => {
    expect(canonicalJson(fromBits(bits))).toBe(text);
  });

  it('writes the number forms the brief names', () => {
    expect(canonicalJson([1e21, 1e-7, 0.000001, -0, 1, 1.5, 100])).toBe('[1e+21,1e-7,0.000001,0,1,1.5,100]');
  });

  it('escapes only quote, backslash and control characters, in lowercase hex', () => {
    expect(canonicalJson('\b\t\n\f\r"\\/')).toBe('"\\b\\t\\n\\f\\r\\"\\\\/"');
    expect(canonicalJson('\u0000\u0001\u001f\u000b')).toBe('"\\u0000\\u0001\\u001f\\u000b"');
    expect(canonicalJson('\u007f\u0080\u2028\u2029é€😀<>&\'')).toBe('"\u007f\u0080\u2028\u2029é€😀<>&\'"');
  });

  it('writes no whitespace', () => {
    expect(canonicalJson({ a: [1, { b: null }], c: 'x y' })).toBe('{"a":[1,{"b":null}],"c":"x y"}');
    expect(canonicalJson({})).toBe('{}');
    expect(canonicalJson([])).toBe('[]');
  });

  it('refuses what has no I-JSON meaning', () => {
    const refused: unknown[] = [
      Number.NaN,
      Number.POSITIVE_INFINITY,
      [Number.NEGATIVE_INFINITY],
      '\ud800',
      { '\udc00': 1 },
      { a: undefined },
      [undefined],
      Object.assign([1], { 2: 2 }),
      undefined,
      1n,
      Symbol('s'),
      () => 1,
      new Date(0),
      new Map(),
      { nested: [new Uint8Array(1)] },
    ];
    for (const value of refused) expect(() => canonicalJson(value as JsonValue)).toThrow(TypeError);
  });

  it('refuses cycles but accepts shared (acyclic) references', () => {
    const cyclic: { [k: string]: JsonValue } = {};
    cyclic.self = [cyclic];
    expect(() => canonicalJson(cyclic)).toThrow(new TypeError('canonicalJson: cyclic structure'));
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: [shared] })).toBe('{"a":{"x":1},"b":[{"x":1}]}');
  });

  it('accepts objects without a prototype and own __proto__ keys', () => {
    const bare = Object.create(null) as { [k: string]: JsonValue };
    bare.b = 1;
    bare.a = 2;
    expect(canonicalJson(bare)).toBe('{"a":2,"b":1}');
    expect(canonicalJson(JSON.parse('{"__proto__":{"x":1},"a":0}') as JsonValue)).toBe('{"__proto__":{"x":1},"a":0}');
  });

  it('counts UTF-8 bytes, not UTF-16 units', () => {
    expect(canonicalJsonByteLength('é€😀')).toBe(2 + 2 + 3 + 4);
    expect(canonicalJsonByteLength({ a: 1 })).toBe(7);
  });

  it('writes known text for the very object it was computed for, and only for it', () => {
    const input = { b: 1, a: [2] };
    const known = new Map([[input, '{"a":[2],"b":1}']]);
    expect(canonicalJson({ request: { input } }, known)).toBe('{"request":{"input":{"a":[2],"b":1}}}');
    // The text is trusted, not recomputed: proof that it is the one written.
    expect(canonicalJson({ input }, new Map([[input, '"known"']]))).toBe('{"input":"known"}');
    expect(canonicalJson({ input: { b: 1, a: [2] } }, new Map([[input, '"known"']]))).toBe('{"input":{"a":[2],"b":1}}');
  });

  describe('properties', () => {
    it('round-trips through JSON.parse (with -0 read back as 0)', () => {
      fc.assert(
        fc.property(jsonValue, (value) => {
          expect(JSON.parse(canonicalJson(value))).toStrictEqual(withoutNegativeZero(value));
        }),
      );
    });

    it('is idempotent', () => {
      fc.assert(
        fc.property(jsonValue, (value) => {
          const once = canonicalJson(value);
          expect(canonicalJson(JSON.parse(once) as JsonValue)).toBe(once);
        }),
      );
    });

    it('does not depend on key insertion order', () => {
      fc.assert(
        fc.property(jsonValue, fc.integer(), (value, seed) => {
          expect(canonicalJson(reorderKeys(value, seed))).toBe(canonicalJson(value));
        }),
      );
    });

    it('is valid JSON that JSON.stringify agrees with for scalars', () => {
      const scalar = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string({ unit: 'binary' }), fc.boolean(), fc.constant(null));
      fc.assert(
        fc.property(scalar, (value) => {
          expect(canonicalJson(value)).toBe(JSON.stringify(value));
        }),
      );
    });

    it('writes the same with the canonical text of any inner object known', () => {
      fc.assert(
        fc.property(jsonValue, (value) => {
          const known = new Map<object, string>();
          const collect = (inner: JsonValue): void => {
            if (inner === null || typeof inner !== 'object') return;
            if (known.size % 2 === 0) known.set(inner, canonicalJson(inner));
            for (const item of Object.values(inner)) collect(item);
          };
          collect(value);
          expect(canonicalJson(value, known)).toBe(canonicalJson(value));
        }),
      );
    });

    it('counts the bytes of exactly what it writes', () => {
      fc.assert(
        fc.property(jsonValue, (value) => {
          expect(canonicalJsonByteLength(value)).toBe(new TextEncoder().encode(canonicalJson(value)).length);
        }),
      );
    });
  });
});

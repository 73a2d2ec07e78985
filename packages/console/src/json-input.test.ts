import { describe, expect, it } from 'vitest';
import { parseJsonObject } from './json-input.js';

describe('parseJsonObject', () => {
  it('accepts objects only', () => {
    expect(parseJsonObject('{"count": 3, "nested": {"a": [1]}}')).toEqual({ ok: true, value: { count: 3, nested: { a: [1] } } });
    expect(parseJsonObject('{}')).toEqual({ ok: true, value: {} });
    for (const [text, error] of [
      ['[1]', /an array/],
      ['null', /null/],
      ['"x"', /a string/],
      ['3', /a number/],
      ['{"a":', /not valid JSON/],
      ['', /not valid JSON/],
    ] as const) {
      const parsed = parseJsonObject(text);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).toMatch(error);
    }
  });
});

import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/database.js';
import { openSql } from '../../../../test/support/sql.js';
import { PreparedStatement } from './prepared-statement.js';
import { literalOf } from './statement-literal.js';

/*
 * A value written as a literal for `EXECUTE name(...)` reads back as the
 * same value the statement gets when pg sends it as a bound parameter,
 * whatever quotes, backslashes, braces or commas it holds.
 */

let client: pg.Client;

beforeAll(async () => {
  client = await openSql(await createTestDatabase('statement literals'));
});

afterAll(async () => {
  await client?.end();
});

const ECHO = new PreparedStatement<{ j: unknown; a: (string | null)[]; t: Date; n: string; b: boolean; s: string | null }>(
  'literal_echo',
  'select $1::json as j, $2::text[] as a, $3::timestamptz as t, $4::bigint::text as n, $5::boolean as b, $6::text as s',
);

const AWKWARD = [`it's`, 'back\\slash', '"quoted"', '{brace}', 'a,b', 'NULL', '', ' spaced ', "\\'both\\'", 'ünïcode ✓'];

describe('literalOf', () => {
  it('reads back through EXECUTE exactly as the bound parameters do', async () => {
    const cases: unknown[][] = [
      [JSON.stringify({ text: AWKWARD, nested: { quote: "'", slash: '\\n' } }), AWKWARD, new Date('2026-12-07T01:02:03.456Z'), 9007199254740993n, true, "it's \\ here"],
      ['[]', [], new Date(0), 0, false, null],
      ['"only a string"', ['one', null, 'two'], new Date('1999-12-31T23:59:59.999Z'), -42, true, ''],
    ];
    for (const values of cases) {
      const [bound] = await ECHO.run(client, values);
      expect(ECHO.isPreparedOn(client)).toBe(true);
      const { rows } = await client.query(ECHO.executeText(values));
      expect(rows[0]).toEqual(bound);
    }
  });

  it('refuses values it has no literal for, rather than guessing', () => {
    expect(() => literalOf({ an: 'object' })).toThrow(TypeError);
    expect(() => literalOf(Number.NaN)).toThrow(TypeError);
    expect(() => literalOf([1, 2])).toThrow(TypeError);
    expect(literalOf(null)).toBe('null');
    expect(literalOf("o'k")).toBe("'o''k'");
    expect(literalOf('a\\b')).toBe("E'a\\\\b'");
  });
});

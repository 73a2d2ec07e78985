/**
 * A value as a JSON statement parameter (`json_to_recordset($1::json)`,
 * `jsonb_populate_recordset`, a jsonb column): `JSON.stringify`, except that
 * a `bigint` (an int8 column, `Int8Column`) is written as its decimal
 * string, which Postgres reads into a bigint column exactly, where a JSON
 * number would lose digits above 2^53 and `JSON.stringify` throws on a
 * bigint. Every row the state service sends as JSON goes through it, so
 * the SQL side reads the same text it always has.
 *
 * Most rows hold no bigint, and a replacer costs a call per key (twice the
 * time of a plain `JSON.stringify` on an admission batch), so the plain
 * encoder goes first; only a value it refuses (a bigint, or a cycle, which
 * the second pass refuses again) takes the replacer.
 */
export function jsonParameter(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    return JSON.stringify(value, bigintAsDecimal);
  }
}

function bigintAsDecimal(_key: string, item: unknown): unknown {
  return typeof item === 'bigint' ? item.toString() : item;
}

/**
 * A value as a JSON statement parameter (`json_to_recordset($1::json)`,
 * `jsonb_populate_recordset`, a jsonb column): `JSON.stringify`, except that
 * a `bigint` (an int8 column, `Int8Column`) is written as its decimal
 * string, which Postgres reads into a bigint column exactly, where a JSON
 * number would lose digits above 2^53 and `JSON.stringify` throws on a
 * bigint. Every row the state service sends as JSON goes through it, so
 * the SQL side reads the same text it always has.
 */
export function jsonParameter(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item));
}

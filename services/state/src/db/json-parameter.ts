/**
 * A value as a JSON statement parameter (`json_to_recordset($1::json)`,
 * `jsonb_populate_recordset`, a jsonb column): `JSON.stringify`, except that
 * a `bigint` (an int8 column, `Int8Column`) is written as its decimal
 * string, which Postgres reads into a bigint column exactly, where a JSON
 * number would lose digits above 2^53 and `JSON.stringify` throws on a
 * bigint. Every row the state service sends as JSON goes through it, so
 * the SQL side reads the same text it always has.
 *
 * A replacer costs a call per key (twice the time of a plain
 * `JSON.stringify` on an admission batch), and a plain encoder that meets
 * a bigint throws, which costs more (about 6 us for a batch's job rows).
 * So rows whose first row holds a bigint at its top level (job rows,
 * events, attempts: their int8 columns) take the replacer at once; any
 * other value goes to the plain encoder first, and only one it refuses (a
 * deeper bigint, or a cycle, which the second pass refuses again) takes
 * the replacer.
 */
export function jsonParameter(value: unknown): string {
  if (firstRowHoldsBigint(value)) return JSON.stringify(value, bigintAsDecimal);
  try {
    return JSON.stringify(value);
  } catch {
    return JSON.stringify(value, bigintAsDecimal);
  }
}

/** Whether `value` is an array whose first element is an object with a bigint among its own values. */
function firstRowHoldsBigint(value: unknown): boolean {
  const first: unknown = Array.isArray(value) ? value[0] : undefined;
  if (typeof first !== 'object' || first === null) return false;
  for (const key in first) if (typeof (first as Record<string, unknown>)[key] === 'bigint') return true;
  return false;
}

function bigintAsDecimal(_key: string, item: unknown): unknown {
  return typeof item === 'bigint' ? item.toString() : item;
}

/**
 * A statement parameter written as an SQL literal, for the few statements
 * that travel inside a simple-protocol query (`EXECUTE name(...)` next to
 * BEGIN or COMMIT, {@link PreparedStatement.executeText}), where there is
 * no Bind message to carry values. The literal is the text pg would have
 * sent as the parameter, quoted, so Postgres reads the same value into the
 * same parameter type: strings (JSON text included) as they are, numbers
 * and bigints in decimal, dates in ISO 8601 (UTC), booleans, null, and
 * arrays of strings in array syntax. Anything else is refused: a statement
 * that needs another type is run with a Bind instead.
 *
 * Quoting doubles `'`; a string with a backslash is written `E'...'` with
 * its backslashes doubled, which reads the same whatever
 * `standard_conforming_strings` is.
 */
export function literalOf(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return quoted(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'bigint') return quoted(value.toString());
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('a statement literal must be a finite number');
    return quoted(String(value));
  }
  if (value instanceof Date) return quoted(value.toISOString());
  if (Array.isArray(value)) return quoted(arrayText(value));
  throw new TypeError(`a statement literal cannot be a ${typeof value}`);
}

/** An array of strings (or nulls) in Postgres array syntax: every element double-quoted, `"` and `\` escaped. */
function arrayText(items: readonly unknown[]): string {
  const elements = items.map((item) => {
    if (item === null || item === undefined) return 'NULL';
    if (typeof item !== 'string') throw new TypeError('a statement literal array holds strings only');
    return `"${item.replace(/[\\"]/g, '\\$&')}"`;
  });
  return `{${elements.join(',')}}`;
}

function quoted(text: string): string {
  const inner = text.replace(/'/g, "''");
  return text.includes('\\') ? `E'${inner.replace(/\\/g, '\\\\')}'` : `'${inner}'`;
}

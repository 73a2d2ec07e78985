import { assertWellFormed } from './well-formed.js';

/** A JSON value as `JSON.parse` produces it: what {@link canonicalJson} accepts. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

/**
 * RFC 8785 (JCS) canonical JSON: the one byte sequence every language
 * produces for the same data, so request digests and event hashes can be
 * recomputed by any client.
 *
 * - Object keys sorted by UTF-16 code units; no whitespace.
 * - Strings escaped as ECMAScript `JSON.stringify` does (only `"`, `\`, and
 *   control characters below U+0020, as `\b \t \n \f \r` or lowercase
 *   `\u00xx`); everything else verbatim.
 * - Numbers in ECMAScript Number-to-String form; `-0` becomes `0`.
 *
 * Refuses, with a TypeError, what has no I-JSON meaning instead of silently
 * dropping or altering it (as `JSON.stringify` would): `NaN`, `±Infinity`,
 * strings or keys with lone surrogates, `undefined` anywhere (including
 * object values and array holes), bigint, functions, symbols, non-plain
 * objects (`Date`, `Map`, class instances) and cycles. Callers handling
 * untrusted input map the TypeError to `INVALID_FIELD`.
 */
export function canonicalJson(value: JsonValue): string {
  return serialize(value, new Set());
}

/** The UTF-8 byte length of {@link canonicalJson}, which SPEC §6 byte limits measure. */
export function canonicalJsonByteLength(value: JsonValue): number {
  return Buffer.byteLength(canonicalJson(value), 'utf8');
}

function serialize(value: unknown, ancestors: Set<object>): string {
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: ${value} is not a JSON number`);
      return String(value);
    case 'string':
      return serializeString(value);
    case 'object':
      if (value === null) return 'null';
      if (ancestors.has(value)) throw new TypeError('canonicalJson: cyclic structure');
      ancestors.add(value);
      try {
        return Array.isArray(value) ? serializeArray(value, ancestors) : serializeObject(value, ancestors);
      } finally {
        ancestors.delete(value);
      }
    default:
      throw new TypeError(`canonicalJson: ${typeof value} is not a JSON value`);
  }
}

function serializeString(text: string): string {
  assertWellFormed(text, 'canonicalJson: string');
  return JSON.stringify(text);
}

function serializeArray(items: readonly unknown[], ancestors: Set<object>): string {
  const parts: string[] = [];
  for (let i = 0; i < items.length; i++) parts.push(serialize(items[i], ancestors));
  return `[${parts.join(',')}]`;
}

function serializeObject(object: object, ancestors: Set<object>): string {
  const prototype: unknown = Object.getPrototypeOf(object);
  if (prototype !== Object.prototype && prototype !== null) {
    throw new TypeError('canonicalJson: only plain objects are JSON objects');
  }
  const record = object as Record<string, unknown>;
  // The default sort compares UTF-16 code units: exactly RFC 8785 §3.2.3.
  const members = Object.keys(record)
    .sort()
    .map((key) => `${serializeString(key)}:${serialize(record[key], ancestors)}`);
  return `{${members.join(',')}}`;
}

import { assertWellFormed } from './well-formed.js';
import { utf8ByteLength } from './utf8.js';

/** A JSON value as `JSON.parse` produces it: what {@link canonicalJson} accepts. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

/**
 * Canonical JSON computed earlier for objects or arrays inside a value,
 * by identity: {@link canonicalJson} writes the known text instead of
 * serialising that object again (a job input validated once, then digested
 * as part of its request). Each text must be `canonicalJson` of its object
 * as the object is now.
 */
export type KnownCanonicalJson = ReadonlyMap<object, string>;

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
 *
 * @param known text already computed for objects inside `value` (see {@link KnownCanonicalJson})
 */
export function canonicalJson(value: JsonValue, known?: KnownCanonicalJson): string {
  return serialize(value, new Set(), known);
}

/** The UTF-8 byte length of {@link canonicalJson}, which SPEC §6 byte limits measure. */
export function canonicalJsonByteLength(value: JsonValue): number {
  return utf8ByteLength(canonicalJson(value));
}

function serialize(value: unknown, ancestors: Set<object>, known: KnownCanonicalJson | undefined): string {
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: ${value} is not a JSON number`);
      return String(value);
    case 'string':
      return serializeString(value);
    case 'object': {
      if (value === null) return 'null';
      const text = known?.get(value);
      if (text !== undefined) return text;
      if (ancestors.has(value)) throw new TypeError('canonicalJson: cyclic structure');
      ancestors.add(value);
      try {
        return Array.isArray(value) ? serializeArray(value, ancestors, known) : serializeObject(value, ancestors, known);
      } finally {
        ancestors.delete(value);
      }
    }
    default:
      throw new TypeError(`canonicalJson: ${typeof value} is not a JSON value`);
  }
}

/** What `JSON.stringify` escapes in a well-formed string; anything else it writes verbatim. */
const ESCAPED = /["\\\u0000-\u001f]/;

function serializeString(text: string): string {
  assertWellFormed(text, 'canonicalJson: string');
  return ESCAPED.test(text) ? JSON.stringify(text) : `"${text}"`;
}

function serializeArray(items: readonly unknown[], ancestors: Set<object>, known: KnownCanonicalJson | undefined): string {
  let text = '[';
  for (let i = 0; i < items.length; i++) {
    if (i > 0) text += ',';
    text += serialize(items[i], ancestors, known);
  }
  return `${text}]`;
}

function serializeObject(object: object, ancestors: Set<object>, known: KnownCanonicalJson | undefined): string {
  const prototype: unknown = Object.getPrototypeOf(object);
  if (prototype !== Object.prototype && prototype !== null) {
    throw new TypeError('canonicalJson: only plain objects are JSON objects');
  }
  const record = object as Record<string, unknown>;
  // The default sort compares UTF-16 code units: exactly RFC 8785 §3.2.3.
  const keys = Object.keys(record).sort();
  let text = '{';
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (i > 0) text += ',';
    text += `${serializeString(key)}:${serialize(record[key], ancestors, known)}`;
  }
  return `${text}}`;
}

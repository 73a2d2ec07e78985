import type { JsonObject } from '@bufbuild/protobuf';

/** What {@link parseJsonObject} makes of a text. */
export type JsonObjectParse = { readonly ok: true; readonly value: JsonObject } | { readonly ok: false; readonly error: string };

/**
 * A form field's text as a JSON object (what a job's input and a signal's
 * payload must be). Arrays, strings, numbers and `null` are refused, as is
 * anything JSON.parse refuses, with its position.
 */
export function parseJsonObject(text: string): JsonObjectParse {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: `not valid JSON: ${(error as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, error: `must be a JSON object ({...}), not ${value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`}` };
  }
  return { ok: true, value: value as JsonObject };
}

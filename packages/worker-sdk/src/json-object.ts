import type { JsonObject } from '@bufbuild/protobuf';
import { DocketWorkerError } from './docket-worker-error.js';

/**
 * `value` as the JSON object it serialises to (`JSON.stringify` rules:
 * `toJSON` is honoured, `undefined` members dropped, Dates become strings),
 * because every payload Docket stores is a `google.protobuf.Struct`.
 * Throws INVALID_OPTION naming `what` (never the value) when `value` is not
 * an object, is an array, or cannot be serialised (a bigint, a cycle).
 */
export function toJsonObject(value: unknown, what: string): JsonObject {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = undefined;
  }
  const parsed: unknown = text === undefined ? undefined : JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw DocketWorkerError.local('INVALID_OPTION', `${what} must be a JSON object`);
  }
  return parsed as JsonObject;
}

import type { JsonObject } from '@bufbuild/protobuf';
import { UsageError } from './command.js';

/**
 * The JSON object given to `flag` (`--payload`, `--input`), or `{}` when
 * the flag is absent; a UsageError naming the flag for text that is not
 * JSON, or JSON that is not an object.
 */
export function parseJsonObjectFlag(text: string | undefined, flag: string): JsonObject {
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(`${flag} must be JSON (a JSON object)`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UsageError(`${flag} must be a JSON object`);
  return value as JsonObject;
}

import { LIMITS, canonicalJsonByteLength, containsNul, invalidField, limitExceeded } from '@docket/contracts';
import type { JsonObject } from '../db/tables/index.js';

/**
 * Checks a JSON object a caller sent (a checkpoint, a result, details, a
 * signal payload): no NUL character (Postgres jsonb cannot store it) and at
 * most `limit` bytes of canonical JSON. Returns the byte length.
 */
export function checkedJsonBytes(value: JsonObject, field: string, limit: 'checkpointBytes' | 'resultBytes' | 'eventPayloadBytes'): number {
  if (containsNul(value)) throw invalidField(field, 'must not contain the NUL character');
  const bytes = canonicalJsonByteLength(value);
  if (bytes > LIMITS[limit]) throw limitExceeded(limit, field);
  return bytes;
}

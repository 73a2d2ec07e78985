import { LIMITS, canonicalJsonByteLength } from '@docket/contracts';
import type { JsonObject } from '../db/tables/index.js';

/**
 * The succeeded parents' results for an envelope, in the job's parent
 * order, up to `LIMITS.parentResultsBytes` of canonical JSON in all; the
 * first result that would pass it and every later one are left out
 * (`parentResultsTruncated`).
 */
export function cappedParentResults(results: readonly (readonly [string, JsonObject])[]): { parentResults: Record<string, JsonObject>; parentResultsTruncated: boolean } {
  const parentResults: Record<string, JsonObject> = {};
  let bytes = 0;
  for (const [parentId, result] of results) {
    bytes += canonicalJsonByteLength(result);
    if (bytes > LIMITS.parentResultsBytes) return { parentResults, parentResultsTruncated: true };
    parentResults[parentId] = result;
  }
  return { parentResults, parentResultsTruncated: false };
}

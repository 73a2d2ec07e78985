import { invalidField } from './errors.js';
import { LIMITS } from './limits.js';

function coercePageSize(requested: number, fallback: number, max: number, field: string): number {
  if (!Number.isSafeInteger(requested) || requested < 0) {
    throw invalidField(field, 'must be a non-negative integer');
  }
  if (requested === 0) return fallback;
  return Math.min(requested, max);
}

/**
 * The effective `page_size` of ReadJobEvents (SPEC §6): 0 means 100, values
 * above 256 are coerced to 256, negative (or non-integer) values are
 * `INVALID_FIELD` on `field`.
 */
export function coerceEventPageSize(requested: number, field = 'page_size'): number {
  return coercePageSize(requested, LIMITS.eventPageDefault, LIMITS.eventPageMax, field);
}

/**
 * The effective `page_size` of List RPCs (AIP-158): 0 means 50, values above
 * 200 are coerced to 200, negative (or non-integer) values are
 * `INVALID_FIELD` on `field`.
 */
export function coerceListPageSize(requested: number, field = 'page_size'): number {
  return coercePageSize(requested, LIMITS.listPageDefault, LIMITS.listPageMax, field);
}

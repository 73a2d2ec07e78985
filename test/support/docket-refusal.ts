import { expect } from 'vitest';
import { isDocketError } from '@docket/contracts';

/** What a refusal says: its reason and the fields it names, in order. */
export interface Refusal {
  readonly reason: string;
  readonly fields: string[];
}

/**
 * What `parse` (a validation, a request parser) refuses with: the
 * DocketError's reason and fields. Throws when `parse` accepts, and
 * rethrows anything else it throws.
 */
export function refusalOf(parse: () => unknown): Refusal {
  try {
    parse();
  } catch (error) {
    if (isDocketError(error)) return { reason: error.reason, fields: error.fieldViolations.map((v) => v.field) };
    throw error;
  }
  throw new Error('expected a refusal');
}

/** For `toThrow`: a DocketError refusing `field` as INVALID_FIELD (an asymmetric matcher). */
export function invalidFieldRefusal(field: string) {
  return expect.objectContaining({
    name: 'DocketError',
    reason: 'INVALID_FIELD',
    fieldViolations: [expect.objectContaining({ field })],
  });
}

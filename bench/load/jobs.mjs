// What every system is asked to store: the same small JSON input for each
// job, keyed by a unique idempotency key.

/** The input of job `index`: about 120 bytes of JSON, identical for every system. */
export const jobInput = (index) => ({ index, note: 'x'.repeat(100) });

/** A unique idempotency key for job `index` of a run whose keys start with `prefix`. */
export const jobKey = (prefix, index) => `${prefix}-${index}`;


/**
 * Failure classes (SPEC section 5) and what the service does with each. The
 * worker names the class; the service derives the disposition.
 */
export const FAILURE_DISPOSITIONS = {
  INVALID_INPUT: 'permanent',
  PERMISSION: 'permanent',
  NOT_FOUND: 'permanent',
  INPUT_CHANGED: 'permanent',
  TRANSIENT: 'retryable',
  CAPACITY: 'retryable',
  INTEGRITY: 'retryable',
  TIMEOUT: 'retryable',
  INTERNAL: 'retryable',
  CANCELLED: 'service',
  LOST_ATTEMPT: 'service',
  APPROVAL_DENIED: 'service',
} as const;

/** A failure class name. */
export type FailureClassName = keyof typeof FAILURE_DISPOSITIONS;

/** Whether a worker may report `name` (service-assigned classes it may not). */
export function isWorkerFailureClass(name: string): name is FailureClassName {
  return name in FAILURE_DISPOSITIONS && FAILURE_DISPOSITIONS[name as FailureClassName] !== 'service';
}

/** Whether the service retries a failure of this class while attempts remain. */
export function isRetryableFailure(name: FailureClassName): boolean {
  return FAILURE_DISPOSITIONS[name] === 'retryable' || name === 'LOST_ATTEMPT';
}

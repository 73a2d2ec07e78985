import type { JsonObject } from '@bufbuild/protobuf';

/** Failure classes after which the service fails the job at once (SPEC section 5). */
export type PermanentFailureClass = 'INVALID_INPUT' | 'PERMISSION' | 'NOT_FOUND' | 'INPUT_CHANGED';

/** Failure classes after which the service retries while attempts remain (SPEC section 5). */
export type RetryableFailureClass = 'TRANSIENT' | 'CAPACITY' | 'INTEGRITY' | 'TIMEOUT' | 'INTERNAL';

/** Every class a worker may report; the service-assigned ones (CANCELLED, LOST_ATTEMPT, APPROVAL_DENIED) are not among them. */
export type WorkerFailureClass = PermanentFailureClass | RetryableFailureClass;

const PERMANENT: ReadonlySet<string> = new Set<PermanentFailureClass>(['INVALID_INPUT', 'PERMISSION', 'NOT_FOUND', 'INPUT_CHANGED']);
const RETRYABLE: ReadonlySet<string> = new Set<RetryableFailureClass>(['TRANSIENT', 'CAPACITY', 'INTEGRITY', 'TIMEOUT', 'INTERNAL']);

/** The longest failure message the service accepts; longer ones are cut here. */
export const FAILURE_MESSAGE_MAX = 4096;

/**
 * A failure the handler means: throw it and the SDK reports
 * `failure {failure_class, message, safe_details}` for the attempt. The
 * service derives the disposition from the class alone: permanent classes
 * fail the job, retryable ones schedule a retry while attempts remain.
 *
 * `message` and `safeDetails` are shown to the job's owner, so they must
 * hold no secrets. Any other error a handler throws is reported as class
 * INTERNAL with a fixed message: its text stays in the worker.
 */
export class JobFailure extends Error {
  override readonly name = 'JobFailure';
  /** The class reported to the service. */
  readonly failureClass: WorkerFailureClass;
  /** Structured, non-secret details for the owner (a JSON object). */
  readonly safeDetails: JsonObject | undefined;

  constructor(failureClass: WorkerFailureClass, message: string, safeDetails?: JsonObject, options?: { cause?: unknown }) {
    if (!isWorkerFailureClass(failureClass)) {
      throw new TypeError(`not a worker failure class: ${String(failureClass)}`);
    }
    super(message.length > FAILURE_MESSAGE_MAX ? message.slice(0, FAILURE_MESSAGE_MAX) : message, options);
    this.failureClass = failureClass;
    this.safeDetails = safeDetails;
  }

  /** Whether the service will retry this class (while attempts remain). */
  get retryable(): boolean {
    return RETRYABLE.has(this.failureClass);
  }
}

/** A {@link JobFailure} the service will not retry: the job ends FAILED. */
export function permanentFailure(failureClass: PermanentFailureClass, message: string, safeDetails?: JsonObject): JobFailure {
  return new JobFailure(failureClass, message, safeDetails);
}

/** A {@link JobFailure} the service retries with backoff while attempts remain, then fails. */
export function retryableFailure(failureClass: RetryableFailureClass, message: string, safeDetails?: JsonObject): JobFailure {
  return new JobFailure(failureClass, message, safeDetails);
}

/** Whether `name` is a class a worker may report. */
export function isWorkerFailureClass(name: unknown): name is WorkerFailureClass {
  return typeof name === 'string' && (PERMANENT.has(name) || RETRYABLE.has(name));
}

/** Whether `error` is a {@link JobFailure}, judged by name and class so it also works across copies of the SDK. */
export function isJobFailure(error: unknown): error is JobFailure {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { name?: unknown }).name === 'JobFailure' &&
    isWorkerFailureClass((error as { failureClass?: unknown }).failureClass)
  );
}

import { DocketError } from './errors.js';

/** Every job status of SPEC §4 and §14 (wire enum `JOB_STATUS_<name>`), non-terminal first. */
export const JOB_STATUSES = Object.freeze([
  'WAITING',
  'QUEUED',
  'RUNNING',
  'PAUSED',
  'RETRY_WAIT',
  'CANCELLING',
  'SUCCEEDED',
  'FAILED',
  'CANCELLED',
  'INTERRUPTED',
] as const);

/** A job status, short form (SPEC §12). */
export type JobStatusName = (typeof JOB_STATUSES)[number];

/** The statuses a job never leaves. */
export const TERMINAL_STATUSES: ReadonlySet<JobStatusName> = new Set<JobStatusName>([
  'SUCCEEDED',
  'FAILED',
  'CANCELLED',
  'INTERRUPTED',
]);

/**
 * The legal edges of SPEC §4 and §14 (WAITING: parents not settled), and
 * nothing else. Every status change any service writes is checked against
 * this table before anything is written.
 */
export const LEGAL_EDGES: Readonly<Record<JobStatusName, readonly JobStatusName[]>> = Object.freeze({
  // No WAITING -> FAILED (SPEC section 14's precise rules): a waiting job never ran, so nothing can fail it.
  WAITING: Object.freeze(['QUEUED', 'PAUSED', 'CANCELLED'] as const),
  QUEUED: Object.freeze(['RUNNING', 'PAUSED', 'CANCELLED', 'FAILED'] as const),
  RUNNING: Object.freeze(['PAUSED', 'SUCCEEDED', 'FAILED', 'RETRY_WAIT', 'CANCELLING', 'INTERRUPTED'] as const),
  PAUSED: Object.freeze(['QUEUED', 'WAITING', 'CANCELLED', 'FAILED'] as const),
  RETRY_WAIT: Object.freeze(['QUEUED', 'PAUSED', 'CANCELLED', 'FAILED'] as const),
  CANCELLING: Object.freeze(['CANCELLED', 'SUCCEEDED', 'FAILED'] as const),
  SUCCEEDED: Object.freeze([] as const),
  FAILED: Object.freeze([] as const),
  CANCELLED: Object.freeze([] as const),
  INTERRUPTED: Object.freeze([] as const),
});

/** Whether `x` is one of {@link JOB_STATUSES}. Never throws. */
export function isJobStatusName(x: unknown): x is JobStatusName {
  return typeof x === 'string' && Object.hasOwn(LEGAL_EDGES, x);
}

/** Whether a job in `status` can never change status again. */
export function isTerminal(status: JobStatusName): boolean {
  return TERMINAL_STATUSES.has(status);
}

/** Whether `from -> to` is an edge of SPEC §4. A status is never a legal edge to itself. */
export function isLegalTransition(from: JobStatusName, to: JobStatusName): boolean {
  return LEGAL_EDGES[from].includes(to);
}

/**
 * Refuses an illegal edge with `FAILED_PRECONDITION` / `ILLEGAL_TRANSITION`
 * (metadata `{from, to}`), to be called before anything is written so the
 * prior durable status stays (SPEC §4).
 */
export function assertLegalTransition(from: JobStatusName, to: JobStatusName): void {
  if (!isLegalTransition(from, to)) {
    throw new DocketError('ILLEGAL_TRANSITION', `a ${from} job cannot become ${to}`, {
      metadata: { from, to },
    });
  }
}

/**
 * The ended statuses an owner's RetryJob may take back to QUEUED (SPEC §8):
 * the one deliberate exception to "terminal jobs never reopen", never
 * taken by any automatic path. SUCCEEDED is not among them.
 */
export const RETRYABLE_ENDINGS: ReadonlySet<JobStatusName> = new Set<JobStatusName>(['FAILED', 'CANCELLED', 'INTERRUPTED']);

/**
 * {@link assertLegalTransition}, or for a RetryJob (`reopen`) only one of
 * {@link RETRYABLE_ENDINGS} -> QUEUED (or WAITING, for a child whose
 * parents have not all settled).
 */
export function assertLegalChange(from: JobStatusName, to: JobStatusName, reopen = false): void {
  if (reopen && (to === 'QUEUED' || to === 'WAITING') && RETRYABLE_ENDINGS.has(from)) return;
  assertLegalTransition(from, to);
}

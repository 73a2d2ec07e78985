/**
 * The event types of a job whose first attempt was lost and whose retry
 * succeeded (SPEC section 5, lost attempt policy RETRY), in journal order:
 * however the attempt was lost (its worker crashed and its name registered
 * again, or it froze past its lease and the reaper settled it), the journal
 * tells the same story, and nothing the lost worker sends afterwards adds
 * to it.
 */
export const LOST_ATTEMPT_RETRIED_JOURNAL: readonly string[] = Object.freeze([
  'job.admitted',
  'attempt.started',
  'attempt.lost',
  'job.retry_scheduled',
  'job.requeued',
  'attempt.started',
  'job.succeeded',
]);

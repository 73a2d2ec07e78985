import type { Queryable } from '../db/database.js';
import { endAttempt } from '../db/queries/attempts.js';
import type { JobRow } from '../db/queries/jobs.js';
import { applyTransition } from '../transitions/apply-transition.js';
import type { LeaseEnd } from './attempt-limits.js';
import { planAttemptEnding } from './attempt-ending.js';
import { moveSignalsIn } from '../db/queries/signals.js';
import { inboxDisagrees } from '../signals/signal-inbox.js';

/**
 * Settles a running job's current attempt as lost, in the caller's
 * transaction with the job row locked: the reaper does it when the lease
 * expired (the service's lease, or one of the job's attempt limits that
 * bounded it), a registration when it superseded the attempt's incarnation.
 * What the job becomes is `planAttemptEnding`'s `lost` case; signals
 * delivered to the attempt and not acknowledged become UNKNOWN.
 */
export async function settleLostAttempt(
  tx: Queryable,
  job: JobRow,
  reason: LeaseEnd | 'superseded',
  now: Date,
): Promise<JobRow> {
  const planned = planAttemptEnding(job, { kind: 'lost', reason }, now);
  if (job.current_attempt_id) await endAttempt(tx, job.current_attempt_id, planned.attemptStatus, now);
  const settled = (await applyTransition(tx, job, planned.transition, now)).job;
  if (!(await moveSignalsIn(tx, planned.signalMoves))) throw inboxDisagrees();
  return settled;
}

import type { JobRow } from '../db/queries/jobs.js';
import type { JsonObject } from '../db/tables/index.js';
import { planAttemptEnding, type AttemptEnding } from '../attempts/attempt-ending.js';
import type { EffectRow } from '../effects/effect-lifecycle.js';
import type { InboxChange } from '../signals/signal-inbox.js';
import type { JobWriteSet } from '../transitions/job-write-set.js';
import { planTransition } from '../transitions/transition-plan.js';

/*
 * What several attempt-scoped calls write the same way: an event journaled
 * as the current attempt, the end of the attempt, an inbox change and an
 * effect's transition.
 */

/** A journal event of the job's current attempt (its id and fence). */
export function attemptEvent(job: JobRow, type: string, payload: JsonObject) {
  return { type, payload, ...(job.current_attempt_id ? { attemptId: job.current_attempt_id } : {}), fence: job.fence };
}

/** Ends the job's current attempt (an outcome or an approval request) into `writes`; the job as left. */
export function endAttempt(writes: JobWriteSet, job: JobRow, ending: AttemptEnding, now: Date): JobRow {
  const ended = planAttemptEnding(job, ending, now);
  const planned = planTransition(job, ended.transition, now);
  if (job.current_attempt_id) writes.endedAttempts.push({ id: job.current_attempt_id, status: ended.attemptStatus });
  writes.transition(planned);
  writes.signalMoves.push(...ended.signalMoves);
  return planned.job;
}

/** An inbox change of a running job, journaled as its current attempt. */
export function inboxTransition(writes: JobWriteSet, job: JobRow, change: InboxChange, now: Date): void {
  writes.transition(planTransition(job, { events: change.events.map((event) => attemptEvent(job, event.type, event.payload)), patch: change.patch }, now));
  writes.signalMoves.push(...change.moves);
}

/** A created or advanced effect, journaled (`effect.*` with its id, kind, state and revision; never its key). */
export function effectTransition(writes: JobWriteSet, job: JobRow, effect: EffectRow, type: string, now: Date): void {
  // The journal carries int8 values as decimal strings (a JSON number would round above 2^53).
  const payload: JsonObject = { effect_id: effect.id, kind: effect.kind, state: effect.state, revision: effect.revision.toString() };
  if (effect.cancellation !== 'NOT_REQUESTED') payload['cancellation'] = effect.cancellation;
  if (effect.recovery) payload['reason'] = effect.recovery['reason'] ?? null;
  writes.transition(planTransition(job, { events: [attemptEvent(job, type, payload)] }, now));
  writes.effects.set(effect.id, effect);
}

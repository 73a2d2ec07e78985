// For systems that complete jobs behind our back (pg-boss work(),
// graphile-worker run()): the moment the database shows every job done.
// The handler count says when to start looking, so the polling costs nothing
// during the run and ends the measurement within a few milliseconds.
import { setTimeout as sleep } from 'node:timers/promises';
import { wallClock } from '../generators/protocol.mjs';

/**
 * Counts handler calls; once `total` handlers have run, polls
 * `isSettled()` every `intervalMs` and resolves with the wall-clock time it
 * first answered true.
 */
export function settlementWatch(total, isSettled, intervalMs = 2) {
  let handled = 0;
  let reached;
  const allHandled = new Promise((resolve) => (reached = resolve));
  return {
    /** Call from the handler, once per job. */
    handled() {
      handled += 1;
      if (handled === total) reached();
    },
    async settledAt() {
      await allHandled;
      while (!(await isSettled())) await sleep(intervalMs);
      return wallClock();
    },
  };
}

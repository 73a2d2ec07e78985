import type { Migration } from './migration.js';

/**
 * When each worker incarnation was last seen (ListWorkers, ExplainJob's
 * NO_LIVE_WORKER): a claim, a report or a renewal of it moves
 * `last_seen_at` to the transaction's clock, at most once a second (the
 * claim and report statements skip a row seen less than a second ago, and
 * the report path skips a row another transaction holds, so it never waits
 * for nor deadlocks with a claim or a registration). An incarnation is LIVE
 * while it is not superseded and was seen within the lease duration.
 */
export const workerLastSeen: Migration = {
  id: '20261206-0010-worker-last-seen',
  creates: ['worker_incarnations_newest'],
  sql: `
alter table worker_incarnations add column last_seen_at timestamptz;
update worker_incarnations set last_seen_at = registered_at;
alter table worker_incarnations alter column last_seen_at set not null;

create index worker_incarnations_newest on worker_incarnations (registered_at desc, id desc);
`,
};

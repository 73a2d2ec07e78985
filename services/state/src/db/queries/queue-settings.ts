import type { Selectable, Updateable } from 'kysely';
import type { Queryable } from '../database.js';
import type { QueueSettingsTable } from '../tables/index.js';

/** A queue's flow control as stored. */
export type QueueSettingsRow = Selectable<QueueSettingsTable>;

/** The flow-control columns a policy change sets; those left out keep their values. */
export type QueueSettingsChange = Omit<Updateable<QueueSettingsTable>, 'queue'>;

/**
 * A queue's flow control, if it has any: a queue without a row has no
 * limit, no rate and is not paused.
 *
 * ```sql
 * select * from queue_settings where queue = $1
 * ```
 */
export async function findQueueSettings(db: Queryable, queue: string): Promise<QueueSettingsRow | undefined> {
  return db.selectFrom('queue_settings').selectAll().where('queue', '=', queue).executeTakeFirst();
}

/**
 * Writes a change of a queue's flow control (a queue without a row starts
 * from no limits), then removes the row if nothing is left to enforce, so
 * claims of an unconfigured queue take no lock. Two statements: run it in
 * a transaction.
 *
 * ```sql
 * insert into queue_settings (queue, max_concurrency, rate_jobs, rate_per_ms, rate_tokens, rate_refilled_at, paused, per_key_concurrency)
 *   values ($1, null, null, null, null, null, false, null) -- with the change's columns in place
 * on conflict (queue) do update set <the change's columns>;
 * delete from queue_settings where queue = $1
 *   and max_concurrency is null and rate_jobs is null and paused = false and per_key_concurrency is null
 * ```
 */
export async function writeQueueSettings(db: Queryable, queue: string, change: QueueSettingsChange): Promise<void> {
  await db
    .insertInto('queue_settings')
    .values({ queue, max_concurrency: null, rate_jobs: null, rate_per_ms: null, rate_tokens: null, rate_refilled_at: null, paused: false, per_key_concurrency: null, ...change })
    .onConflict((conflict) => conflict.column('queue').doUpdateSet(change))
    .execute();
  await db
    .deleteFrom('queue_settings')
    .where('queue', '=', queue)
    .where('max_concurrency', 'is', null)
    .where('rate_jobs', 'is', null)
    .where('paused', '=', false)
    .where('per_key_concurrency', 'is', null)
    .execute();
}

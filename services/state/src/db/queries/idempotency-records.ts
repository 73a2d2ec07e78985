import { sql, type Insertable, type Selectable } from 'kysely';
import type { Queryable } from '../database.js';
import type { IdempotencyRecordsTable } from '../tables/index.js';

/** The scope an idempotency key is bound in. */
export interface IdempotencyScope {
  readonly subject: string;
  readonly operation: string;
  /** SHA-256 of the key; the key itself is never stored. */
  readonly keyHash: Buffer;
}

/** A stored binding. */
export type IdempotencyRecord = Selectable<IdempotencyRecordsTable>;

/**
 * The live (unexpired) binding of a scope, if any.
 *
 * ```sql
 * select * from idempotency_records
 * where subject = $1 and operation = $2 and key_hash = $3 and expires_at > now()
 * ```
 */
export async function findIdempotencyRecord(db: Queryable, scope: IdempotencyScope): Promise<IdempotencyRecord | undefined> {
  return db
    .selectFrom('idempotency_records')
    .selectAll()
    .where('subject', '=', scope.subject)
    .where('operation', '=', scope.operation)
    .where('key_hash', '=', scope.keyHash)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
}

/**
 * Binds a scope to a digest and response, unless a live binding exists.
 * Concurrent binders of one scope serialise on the primary key: the first
 * commits, the others wait for it and then find its row. An expired binding
 * that the sweeper has not removed yet is taken over. Returns whether this
 * call made the binding.
 *
 * ```sql
 * insert into idempotency_records (...) values (...)
 * on conflict (subject, operation, key_hash) do update set ...
 *   where idempotency_records.expires_at <= now()
 * returning subject
 * ```
 */
export async function bindIdempotencyRecord(
  db: Queryable,
  record: Insertable<IdempotencyRecordsTable>,
): Promise<boolean> {
  const bound = await db
    .insertInto('idempotency_records')
    .values(record)
    .onConflict((conflict) =>
      conflict
        .columns(['subject', 'operation', 'key_hash'])
        .doUpdateSet({
          request_digest: (eb) => eb.ref('excluded.request_digest'),
          job_id: (eb) => eb.ref('excluded.job_id'),
          response: (eb) => eb.ref('excluded.response'),
          created_at: (eb) => eb.ref('excluded.created_at'),
          expires_at: (eb) => eb.ref('excluded.expires_at'),
          redacted: false,
        })
        .where('idempotency_records.expires_at', '<=', sql<Date>`now()`),
    )
    .returning('subject')
    .executeTakeFirst();
  return bound !== undefined;
}

/**
 * Stores the complete response of the mutation a binding was made for, in
 * the binding's transaction.
 *
 * ```sql
 * update idempotency_records set response = $4, job_id = $5
 * where subject = $1 and operation = $2 and key_hash = $3
 * ```
 */
export async function storeIdempotentResponse(db: Queryable, scope: IdempotencyScope, response: Buffer, jobId: string | null): Promise<void> {
  await db
    .updateTable('idempotency_records')
    .set({ response, job_id: jobId })
    .where('subject', '=', scope.subject)
    .where('operation', '=', scope.operation)
    .where('key_hash', '=', scope.keyHash)
    .execute();
}

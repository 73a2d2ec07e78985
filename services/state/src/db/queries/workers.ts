import { sql, type Selectable } from 'kysely';
import type { Queryable } from '../database.js';
import type { WorkerIncarnationsTable } from '../tables/index.js';

/** A worker incarnation as read. */
export type IncarnationRow = Selectable<WorkerIncarnationsTable>;

/**
 * The next generation of a worker name, persisted: the row lock taken here
 * also serialises concurrent registrations of one name.
 *
 * ```sql
 * insert into worker_names (subject, name, generation) values ($1, $2, 1)
 * on conflict (subject, name) do update set generation = worker_names.generation + 1
 * returning generation
 * ```
 */
export async function nextWorkerGeneration(db: Queryable, subject: string, name: string): Promise<bigint> {
  const row = await db
    .insertInto('worker_names')
    .values({ subject, name, generation: '1' })
    .onConflict((conflict) =>
      conflict.columns(['subject', 'name']).doUpdateSet({ generation: sql<string>`worker_names.generation + 1` }),
    )
    .returning('generation')
    .executeTakeFirstOrThrow();
  return BigInt(row.generation);
}

/**
 * Marks every live incarnation of a name superseded; returns their ids.
 *
 * ```sql
 * update worker_incarnations set superseded_at = $3
 * where subject = $1 and name = $2 and superseded_at is null returning id
 * ```
 */
export async function supersedeIncarnations(db: Queryable, subject: string, name: string, now: Date): Promise<string[]> {
  const rows = await db
    .updateTable('worker_incarnations')
    .set({ superseded_at: now })
    .where('subject', '=', subject)
    .where('name', '=', name)
    .where('superseded_at', 'is', null)
    .returning('id')
    .execute();
  return rows.map((row) => row.id);
}

/**
 * Inserts a new incarnation.
 *
 * ```sql
 * insert into worker_incarnations (...) values (...)
 * ```
 */
export async function insertIncarnation(db: Queryable, row: IncarnationRow): Promise<void> {
  await db.insertInto('worker_incarnations').values(row).execute();
}

/**
 * An incarnation of `subject`, if it exists.
 *
 * ```sql
 * select * from worker_incarnations where id = $1 and subject = $2
 * ```
 */
export async function findIncarnation(db: Queryable, subject: string, id: string): Promise<IncarnationRow | undefined> {
  return db.selectFrom('worker_incarnations').selectAll().where('id', '=', id).where('subject', '=', subject).executeTakeFirst();
}

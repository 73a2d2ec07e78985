import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { Queryable } from '../database.js';
import { holdsASlot } from './claimability.js';
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
    .values({ subject, name, generation: 1n })
    .onConflict((conflict) =>
      conflict.columns(['subject', 'name']).doUpdateSet({ generation: sql<bigint>`worker_names.generation + 1` }),
    )
    .returning('generation')
    .executeTakeFirstOrThrow();
  return row.generation;
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

/**
 * A worker incarnation's state by the database clock, as SQL over the row
 * named `worker`: SUPERSEDED once a later registration replaced it, LIVE
 * while it was seen (`last_seen_at`: a claim, report or renewal) within
 * `leaseMs`, EXPIRED after. ListWorkers and ExplainJob's NO_LIVE_WORKER
 * both read it.
 */
export function workerStateSql(worker: string, leaseMs: number): RawBuilder<'LIVE' | 'EXPIRED' | 'SUPERSEDED'> {
  return sql.raw(workerStateOf(worker, String(Math.trunc(leaseMs))));
}

/** {@link workerStateSql} as text, the lease given as an SQL expression in ms (a literal, or a statement's parameter). */
export function workerStateOf(worker: string, leaseMs: string): string {
  return `case when ${worker}.superseded_at is not null then 'SUPERSEDED'
    when ${worker}.last_seen_at > now() - ${leaseMs}::float8 * interval '1 millisecond' then 'LIVE' else 'EXPIRED' end`;
}

/** One worker of a ListWorkers page. */
export type WorkerListingRow = IncarnationRow & { readonly state: 'LIVE' | 'EXPIRED' | 'SUPERSEDED'; readonly running_attempts: number };

/** Which workers a ListWorkers page shows. */
export interface WorkerListing {
  /** Only workers registered for this queue; empty for all. */
  readonly queue: string;
  /** Keyset position: only workers registered strictly before it. */
  readonly after: { readonly registeredAt: Date; readonly id: string } | undefined;
  readonly limit: number;
  readonly leaseMs: number;
}

/**
 * Worker incarnations, newest registration first, with their state and
 * the attempts each holds (`jobs_held_by`).
 *
 * ```sql
 * select w.*, <state>, (select count(*) from jobs where current_worker_incarnation = w.id and status in ('RUNNING', 'CANCELLING'))
 * from worker_incarnations w where ($1 = '' or $1 = any(w.queues)) and (registered_at, id) < ($2, $3)
 * order by registered_at desc, id desc limit $4
 * ```
 */
export async function listWorkerIncarnations(db: Queryable, listing: WorkerListing): Promise<WorkerListingRow[]> {
  let query = db
    .selectFrom('worker_incarnations as w')
    .selectAll('w')
    .select([
      workerStateSql('w', listing.leaseMs).as('state'),
      sql<bigint>`(select count(*) from jobs j where j.current_worker_incarnation = w.id and ${sql.raw(holdsASlot('j'))})`.as('running'),
    ]);
  if (listing.queue !== '') query = query.where(sql<boolean>`${listing.queue} = any(w.queues)`);
  if (listing.after) query = query.where(sql<boolean>`(w.registered_at, w.id) < (${listing.after.registeredAt}, ${listing.after.id})`);
  const rows = await query.orderBy('w.registered_at', 'desc').orderBy('w.id', 'desc').limit(listing.limit).execute();
  return rows.map(({ running, ...row }) => ({ ...row, running_attempts: Number(running) }));
}

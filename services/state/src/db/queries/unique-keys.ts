import { sql } from 'kysely';
import type pg from 'pg';
import { TERMINAL_STATUSES } from '@docket/contracts';
import type { Queryable } from '../database.js';
import { jsonParameter } from '../json-parameter.js';
import { PreparedStatement } from '../prepared-statement.js';
import type { JobRow } from './jobs.js';

/** A `unique_while_active` scope: the owner, the queue and the key. */
export interface UniqueScope {
  readonly owner: string;
  readonly queue: string;
  readonly unique_key: string;
}

/** The scope as one text, unambiguous (a JSON array): the advisory lock's name and a map key. */
export function uniqueScopeName(scope: UniqueScope): string {
  return JSON.stringify([scope.owner, scope.queue, scope.unique_key]);
}

const LOCK_UNIQUE_SCOPES = new PreparedStatement<{ locked: unknown }>(
  'docket_lock_unique_scopes',
  `select pg_advisory_xact_lock(hashtextextended('docket.unique:' || scope, 0)) as locked
   from (select distinct unnest($1::text[]) as scope order by 1) ordered`,
);

/**
 * Takes a transaction-scoped advisory lock per scope, in name order (so
 * admissions that share keys wait for each other and never deadlock):
 * until this transaction ends, no other admission decides these scopes.
 *
 * ```sql
 * select pg_advisory_xact_lock(hashtextextended('docket.unique:' || scope, 0))
 *   from (select distinct unnest($1) as scope order by 1) ordered
 * ```
 */
export async function lockUniqueScopes(client: pg.ClientBase, scopes: readonly UniqueScope[]): Promise<void> {
  if (scopes.length === 0) return;
  await LOCK_UNIQUE_SCOPES.run(client, [scopes.map(uniqueScopeName)]);
}

const ACTIVE_HOLDERS = new PreparedStatement<JobRow>(
  'docket_unique_active_holders',
  `select j.* from json_to_recordset($1::json) as k(owner text, queue text, unique_key text)
   join jobs j on j.owner = k.owner and j.queue = k.queue and j.unique_key = k.unique_key
   where j.unique_key is not null and j.status not in ('SUCCEEDED', 'FAILED', 'CANCELLED', 'INTERRUPTED')`,
);

/**
 * The non-terminal job holding each of `scopes`, by {@link uniqueScopeName}
 * (through the partial unique index `jobs_unique_while_active`). Run in a
 * statement of its own after {@link lockUniqueScopes}, so it sees every
 * admission committed before the locks were granted.
 *
 * ```sql
 * select j.* from json_to_recordset($1) k(owner, queue, unique_key)
 *   join jobs j on (j.owner, j.queue, j.unique_key) = (k.owner, k.queue, k.unique_key)
 *  where j.unique_key is not null and j.status not in (<terminal>)
 * ```
 */
export async function readActiveHolders(client: pg.ClientBase, scopes: readonly UniqueScope[]): Promise<Map<string, JobRow>> {
  if (scopes.length === 0) return new Map();
  const rows = await ACTIVE_HOLDERS.run(client, [jsonParameter(scopes)]);
  return new Map(rows.map((row) => [uniqueScopeName({ owner: row.owner, queue: row.queue, unique_key: row.unique_key! }), row]));
}

/**
 * Locks one scope (as {@link lockUniqueScopes} does) and returns the id of
 * a non-terminal job other than `exceptJobId` that holds it, if any: what
 * RetryJob asks before it brings an ended job back.
 *
 * ```sql
 * select pg_advisory_xact_lock(hashtextextended('docket.unique:' || $1, 0));
 * select id from jobs where owner = $1 and queue = $2 and unique_key = $3 and status not in (<terminal>) and id <> $4
 * ```
 */
export async function lockAndFindHolder(db: Queryable, scope: UniqueScope, exceptJobId: string): Promise<string | undefined> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`docket.unique:${uniqueScopeName(scope)}`}, 0))`.execute(db);
  const holder = await db
    .selectFrom('jobs')
    .select('id')
    .where('owner', '=', scope.owner)
    .where('queue', '=', scope.queue)
    .where('unique_key', '=', scope.unique_key)
    .where('status', 'not in', [...TERMINAL_STATUSES])
    .where('id', '<>', exceptJobId)
    .executeTakeFirst();
  return holder?.id;
}

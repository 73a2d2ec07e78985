import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Database } from './tables/index.js';
import { openPool, type DatabasePooling } from './pool.js';

/** A handle usable by every query helper: the pool or an open transaction. */
export type Queryable = Kysely<Database> | Transaction<Database>;

/** Options for {@link openDatabase}. */
export interface DatabaseOptions {
  readonly connectionString: string;
  /** Pool size per state process (default 10). */
  readonly maxConnections?: number;
  /** What sits between the pool and PostgreSQL (default `session`). */
  readonly pooling?: DatabasePooling;
}

/**
 * Opens the state service's pool; its statements are spans of the active
 * trace (see `openPool`). Connection errors surface as typed pg
 * errors; callers must never put their messages (which can carry the
 * connection string's host or user) into responses.
 */
export function openDatabase(options: DatabaseOptions): { db: Kysely<Database>; pool: pg.Pool } {
  const pool = openPool({ connectionString: options.connectionString, max: options.maxConnections ?? 10, applicationName: 'docket-state', pooling: options.pooling ?? 'session' });
  return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), pool };
}

/**
 * The state service's readiness probe of PostgreSQL: resolves once a
 * pooled connection has answered a trivial statement, rejects (with the
 * pg error, never to be put into a response) when none can be had or it
 * fails.
 *
 * ```sql
 * select 1
 * ```
 */
export async function pingDatabase(pool: pg.Pool): Promise<void> {
  await pool.query('select 1');
}

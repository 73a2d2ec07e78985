import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Database } from './tables/index.js';

/** A handle usable by every query helper: the pool or an open transaction. */
export type Queryable = Kysely<Database> | Transaction<Database>;

/** Options for {@link openDatabase}. */
export interface DatabaseOptions {
  readonly connectionString: string;
  /** Pool size per state process (default 10). */
  readonly maxConnections?: number;
}

/**
 * Opens the state service's pool. Connection errors surface as typed pg
 * errors; callers must never put their messages (which can carry the
 * connection string's host or user) into responses.
 */
export function openDatabase(options: DatabaseOptions): { db: Kysely<Database>; pool: pg.Pool } {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    application_name: 'docket-state',
  });
  // An idle client's error (e.g. the server restarting) must not crash the process.
  pool.on('error', () => {});
  // Nor may an error that reaches a checked-out client between two queries
  // (its backend terminated): pg-pool listens only while a client is idle.
  // The query in flight still fails with the error, and pg-pool drops a
  // client whose connection died when it is released.
  pool.on('connect', (client) => client.on('error', () => {}));
  return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), pool };
}

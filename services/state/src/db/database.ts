import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Logger } from '@docket/service-kit';
import type { Database } from './tables/index.js';
import { openPool, type DatabasePooling } from './pool.js';
import { recordCommitsOf, type CommitRecorder } from './write-transaction.js';

/** A handle usable by every query helper: the pool or an open transaction. */
export type Queryable = Kysely<Database> | Transaction<Database>;

/** Options for {@link openDatabase}. */
export interface DatabaseOptions {
  readonly connectionString: string;
  /** Pool size per state process (default 10). */
  readonly maxConnections?: number;
  /** What sits between the pool and PostgreSQL (default `session`). */
  readonly pooling?: DatabasePooling;
  /**
   * Checks each new connection's server before it is used and refuses a
   * connection handed to a query while the database is known to have lost
   * acknowledged writes (the rollback guard).
   */
  readonly guard?: ConnectionGuard;
  /** Where the pool reports a connection lost while idle. */
  readonly logger: Logger;
}

/**
 * What {@link openDatabase} asks of the rollback guard: to check each new
 * connection, to say whether connections may be used (`assertServing`,
 * checked after a connection is had, so a wait for one cannot slip past),
 * and to hear each group commit's position (`recordCommitsOf`).
 */
export interface ConnectionGuard extends CommitRecorder {
  /** Runs on each new connection before it is handed out; a rejection fails the connect. */
  checkConnection(client: pg.ClientBase): Promise<void>;
}

/**
 * Opens the state service's pool; its statements are spans of the active
 * trace (see `openPool`). Connection errors surface as typed pg
 * errors; callers must never put their messages (which can carry the
 * connection string's host or user) into responses.
 */
export function openDatabase(options: DatabaseOptions): { db: Kysely<Database>; pool: pg.Pool } {
  const guard = options.guard;
  const pool = openPool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    applicationName: 'docket-state',
    logger: options.logger,
    pooling: options.pooling ?? 'session',
    ...(guard ? { checkConnection: (client: pg.ClientBase) => guard.checkConnection(client) } : {}),
  });
  if (!guard) return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), pool };
  recordCommitsOf(pool, guard);
  // Kysely's statements take their connections through here: none is used while the guard refuses.
  const guarded = {
    async connect(): Promise<pg.PoolClient> {
      const client = await pool.connect();
      try {
        guard.assertServing();
      } catch (error) {
        client.release();
        throw error;
      }
      return client;
    },
    end: () => pool.end(),
  };
  return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool: guarded }) }), pool };
}

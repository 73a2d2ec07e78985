import pg from 'pg';
import { TracedPgClient } from './traced-pg-client.js';

/** Options for {@link openPool}. */
export interface PoolOptions {
  readonly connectionString: string;
  readonly max: number;
  /** Shown in `pg_stat_activity.application_name`. */
  readonly applicationName: string;
}

/**
 * A pg pool as every store of the state service opens one: its clients are
 * {@link TracedPgClient}s, and a connection error (the server restarting,
 * a backend terminated) never becomes an unhandled `error` event, neither
 * on an idle client (pg-pool's own listener) nor on a checked-out one
 * between two queries (pg-pool listens only while a client is idle). The
 * query in flight still fails with the error, and pg-pool drops a client
 * whose connection died when it is released.
 */
export function openPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    application_name: options.applicationName,
    Client: TracedPgClient,
  });
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

import pg from 'pg';
import { DEFAULT_STATEMENT_TIMEOUT_MS } from './statement-budget.js';
import { TracedPgClient } from './traced-pg-client.js';

/** How long opening a connection may take before the call that needed it fails (UNAVAILABLE). */
export const CONNECT_TIMEOUT_MS = 5_000;

/** How long a session may sit idle inside a transaction before Postgres ends it (a process stopped mid-transaction). */
const IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;

/**
 * The time limits every connection of the state service has: a connect
 * timeout, TCP keepalive (first probe after 10 s idle), a default
 * `statement_timeout` (write transactions lower it to their callers'
 * deadline, `withStatementBudget`) and an idle-in-transaction timeout.
 */
export const CONNECTION_LIMITS = {
  connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  keepAlive: true,
  keepAliveInitialDelayMillis: 10_000,
  statement_timeout: DEFAULT_STATEMENT_TIMEOUT_MS,
  idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
} as const;

/** Options for {@link openPool}. */
export interface PoolOptions {
  readonly connectionString: string;
  readonly max: number;
  /** Shown in `pg_stat_activity.application_name`. */
  readonly applicationName: string;
}

/**
 * A pg pool as every store of the state service opens one: its clients are
 * {@link TracedPgClient}s with the {@link CONNECTION_LIMITS}, and a connection error (the server restarting,
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
    ...CONNECTION_LIMITS,
    Client: TracedPgClient,
  });
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

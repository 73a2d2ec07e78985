import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/database.js';
import { isDatabaseUnavailable } from './sqlstate.js';

/*
 * A pool that cannot hand out a connection in time (every connection busy,
 * or the server unreachable) is the database being unavailable: callers
 * must hear UNAVAILABLE, which they retry, not INTERNAL.
 */

let url: string;

beforeAll(async () => {
  url = await createTestDatabase('sqlstate');
});

describe('isDatabaseUnavailable', () => {
  it("counts pg-pool's connect timeout, on a real pool whose only connection is held", async () => {
    // The first connection is had without the short timeout: on a busy machine opening it can take longer than 100 ms.
    const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 10_000 });
    const held = await pool.connect();
    pool.options.connectionTimeoutMillis = 100;
    try {
      const failure = await pool.connect().then(
        (client) => {
          client.release();
          return undefined;
        },
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(Error);
      expect(isDatabaseUnavailable(failure)).toBe(true);
    } finally {
      held.release();
      await pool.end();
    }
  });

  it('counts a query asked of a pool that was already closed (a call still running at shutdown)', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    await pool.end();
    const failure = await pool.query('select 1').then(() => undefined, (error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(failure)).toBe(true);
  });

  it('counts a refused connection, and not an ordinary query error', async () => {
    const nowhere = new pg.Client({ connectionString: 'postgres://docket@127.0.0.1:1/docket', connectionTimeoutMillis: 1_000 });
    const refused = await nowhere.connect().then(() => undefined, (error: unknown) => error);
    expect(isDatabaseUnavailable(refused)).toBe(true);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const syntax = await client.query('select from nowhere_at_all').then(() => undefined, (error: unknown) => error);
      expect(isDatabaseUnavailable(syntax)).toBe(false);
    } finally {
      await client.end();
    }
  });
});


import pg from 'pg';
import { createLogger } from '@docket/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/database.js';
import { sqlStateOf } from './sqlstate.js';
import { openPool } from './pool.js';
import { PreparedStatement } from './prepared-statement.js';
import { DEFAULT_STATEMENT_TIMEOUT_MS, withStatementBudget } from './statement-budget.js';
import { inWriteTransaction, runAndCommit, type Opening } from './write-transaction.js';

/*
 * A write transaction's statements run no longer than its callers wait
 * (the statement budget becomes `statement_timeout`), and its clock for
 * "now, after the locks" never runs behind the database's.
 */

let pool: pg.Pool;
let databaseUrl: string;

beforeAll(async () => {
  databaseUrl = await createTestDatabase('write transaction');
  pool = new pg.Pool({ connectionString: databaseUrl, max: 3 });
  await pool.query('create table if not exists round_trip_probe (id int primary key, note text)');
});

afterAll(async () => {
  await pool?.end();
});

const timeoutOf = (client: pg.PoolClient) => client.query<{ statement_timeout: string }>('show statement_timeout').then((r) => r.rows[0]!.statement_timeout);

describe('inWriteTransaction', () => {
  it('sets the statement budget in force as the transaction statement_timeout, and the default without one', async () => {
    expect(await inWriteTransaction(pool, timeoutOf)).toBe(`${DEFAULT_STATEMENT_TIMEOUT_MS / 1000}s`);
    // The caller's 1.5 s, less a tenth kept back so its typed answer arrives before its own timer fires.
    const budgeted = await withStatementBudget(1_500, () => inWriteTransaction(pool, timeoutOf));
    expect(budgeted).toMatch(/^1[23]\d\dms$/);
    expect(Number(budgeted.slice(0, -2))).toBeLessThanOrEqual(1_350);
    // Never above the default, never zero (which would mean no limit at all).
    expect(await withStatementBudget(10 * 60_000, () => inWriteTransaction(pool, timeoutOf))).toBe(`${DEFAULT_STATEMENT_TIMEOUT_MS / 1000}s`);
    expect(await withStatementBudget(0, () => inWriteTransaction(pool, timeoutOf))).toBe('1ms');
    // SET LOCAL: the pooled connection does not keep it.
    const client = await pool.connect();
    try {
      expect(await timeoutOf(client)).toBe('0');
    } finally {
      client.release();
    }
  });

  it('stops a statement that outlives the budget (57014) and commits nothing', async () => {
    await pool.query('create table if not exists budget_probe (n int)');
    const failure = await withStatementBudget(200, () =>
      inWriteTransaction(pool, async (client) => {
        await client.query('insert into budget_probe values (1)');
        // Real time: a statement that would outlive the 200 ms budget; the budget cuts it short.
        await client.query('select pg_sleep(2)');
      }),
    ).catch((error: unknown) => error);
    expect(sqlStateOf(failure)).toBe('57014');
    expect((await pool.query('select count(*)::int as n from budget_probe')).rows[0].n).toBe(0);
  });

  it('gives a clock for the present that counts the time spent waiting for a lock', async () => {
    await pool.query('create table if not exists clock_probe (id int primary key)');
    await pool.query('insert into clock_probe values (1) on conflict do nothing');
    const holder = await pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select 1 from clock_probe where id = 1 for update');
      const judged = inWriteTransaction(pool, async (client, now, clockNow) => {
        await client.query('select 1 from clock_probe where id = 1 for update');
        const ours = clockNow();
        const { rows } = await client.query<{ db: Date }>('select clock_timestamp() as db');
        return { now, ours, db: rows[0]!.db };
      });
      // Real time: the lock is held for 600 ms, the wait the database clock must then count.
      await new Promise((resolve) => setTimeout(resolve, 600));
      await holder.query('commit');
      const { now, ours, db } = await judged;
      // The wait counts: `now` was fixed before it, the clock after it.
      expect(ours.getTime() - now.getTime()).toBeGreaterThanOrEqual(500);
      // And it is the database's clock, not the test machine's idea of it: within a round trip of clock_timestamp() read right after.
      expect(Math.abs(db.getTime() - ours.getTime())).toBeLessThan(250);
    } finally {
      holder.release();
    }
  });

  describe('round trips', () => {
    /** A pg client that counts the queries it sends: each is one round trip. */
    class CountingClient extends pg.Client {
      static sent = 0;
      override query(...args: any[]): any {
        CountingClient.sent += 1;
        return super.query(...(args as Parameters<pg.Client['query']>));
      }
    }

    type ProbeRow = { id: number; note: string | null };
    const READ = new PreparedStatement<ProbeRow>('probe_read', 'select id, note from round_trip_probe where id = any($1::int[]) order by id for update');
    const WRITE = new PreparedStatement<{ id: number }>(
      'probe_write',
      `insert into round_trip_probe (id, note) select id, note from json_to_recordset($1::json) as r(id int, note text)
       on conflict (id) do update set note = excluded.note returning id`,
    );

    const probeOpening = (id: number): Opening<ProbeRow[]> => ({ statements: [{ statement: READ, values: [[String(id)]] }], read: ([rows]) => (rows ?? []) as ProbeRow[] });

    /** One batch: the read sent with BEGIN, the write with COMMIT; what it read, and how many queries it sent. */
    async function batch(on: pg.Pool, id: number, note: string): Promise<{ read: unknown[]; sent: number }> {
      const before = CountingClient.sent;
      const read = await inWriteTransaction(
        on,
        async (client, _now, _clockNow, rows) => {
          await runAndCommit(client, WRITE, [JSON.stringify([{ id, note }])]);
          return rows;
        },
        { opening: probeOpening(id) },
      );
      return { read, sent: CountingClient.sent - before };
    }

    it('sends the opening read with BEGIN and the last write with COMMIT once the connection holds both prepared', async () => {
      const counted = new pg.Pool({ connectionString: databaseUrl, max: 1, Client: CountingClient });
      try {
        // The first batch on a connection prepares both statements: four round trips.
        expect(await batch(counted, 1, "first 'one'")).toEqual({ read: [], sent: 4 });
        // Every later one: two, and each reads what the one before committed.
        expect(await batch(counted, 1, 'second \\ one')).toEqual({ read: [{ id: 1, note: "first 'one'" }], sent: 2 });
        expect(await batch(counted, 1, 'third')).toEqual({ read: [{ id: 1, note: 'second \\ one' }], sent: 2 });
        // Committed for every other connection to see.
        expect((await pool.query('select note from round_trip_probe where id = 1')).rows).toEqual([{ note: 'third' }]);
        // A write too large to travel as a literal (a SubmitJobs call of a hundred jobs) runs alone, its COMMIT after it.
        const large = `'\\${'x'.repeat(20_000)}`;
        expect(await batch(counted, 1, large)).toEqual({ read: [{ id: 1, note: 'third' }], sent: 3 });
        expect((await pool.query('select note from round_trip_probe where id = 1')).rows).toEqual([{ note: large }]);
      } finally {
        await counted.end();
      }
    });

    it('commits nothing when the statement sent with COMMIT fails, and the connection goes on', async () => {
      const counted = new pg.Pool({ connectionString: databaseUrl, max: 1, Client: CountingClient });
      try {
        await batch(counted, 2, 'kept');
        const failure = await inWriteTransaction(counted, async (client) => {
          await client.query("update round_trip_probe set note = 'lost' where id = 2");
          // 22P02: the second row's id is not an integer; the COMMIT in the same query never runs.
          await runAndCommit(client, WRITE, [JSON.stringify([{ id: 3, note: 'lost' }, { id: 'x', note: 'lost' }])]);
        }).catch((error: unknown) => error);
        expect(sqlStateOf(failure)).toBe('22P02');
        expect((await pool.query('select id, note from round_trip_probe where id in (2, 3) order by id')).rows).toEqual([{ id: 2, note: 'kept' }]);
        expect(await batch(counted, 2, 'after')).toMatchObject({ read: [{ id: 2, note: 'kept' }], sent: 2 });
      } finally {
        await counted.end();
      }
    });

    it('keeps every statement to its own round trip where sessions are shared (PgBouncer in transaction mode)', async () => {
      const shared = openPool({ connectionString: databaseUrl, max: 1, pooling: 'transaction', applicationName: 'round trips', logger: createLogger('state', () => {}) });
      try {
        for (const note of ['one', 'two']) {
          const read = await inWriteTransaction(
            shared,
            async (client, _now, _clockNow, rows) => {
              await runAndCommit(client, WRITE, [JSON.stringify([{ id: 4, note }])]);
              expect(READ.isPreparedOn(client) || WRITE.isPreparedOn(client)).toBe(false);
              return rows;
            },
            { opening: probeOpening(4) },
          );
          expect(read).toEqual(note === 'one' ? [] : [{ id: 4, note: 'one' }]);
        }
      } finally {
        await shared.end();
      }
    });
  });
});

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/database.js';
import { sqlStateOf } from './sqlstate.js';
import { DEFAULT_STATEMENT_TIMEOUT_MS, withStatementBudget } from './statement-budget.js';
import { inWriteTransaction } from './write-transaction.js';

/*
 * A write transaction's statements run no longer than its callers wait
 * (the statement budget becomes `statement_timeout`), and its clock for
 * "now, after the locks" never runs behind the database's.
 */

let pool: pg.Pool;

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await createTestDatabase('write transaction'), max: 3 });
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
});

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRPC_CODE, isDocketError } from '@docket/contracts';
import { createTestDatabase } from '../../../../test/support/database.js';
import { untilWaitingForALock } from '../../../../test/support/sql.js';
import { translateDatabaseError } from './database-errors.js';
import { sqlStateOf } from './sqlstate.js';

/*
 * The database conditions docs/errors.md promises to translate, each
 * provoked for real on the test run's Postgres (no hand-made error
 * objects): a statement timeout, a deadlock of two transactions, and a
 * serialization failure of two SERIALIZABLE transactions. Each must become
 * the typed error the docs name, with a fixed message that carries nothing
 * of Postgres' own text (SQL, relation names, pids, transaction ids).
 */

let url: string;
const clients: pg.Client[] = [];

beforeAll(async () => {
  url = await createTestDatabase('state database errors');
  const setup = await connect();
  await setup.query('create table accounts (id int primary key, balance int not null)');
  await setup.query('insert into accounts values (1, 100), (2, 100)');
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.end()));
});

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  // A backend error while idle must not crash the test process.
  client.on('error', () => {});
  await client.connect();
  clients.push(client);
  return client;
}

/** The error `query` rejects with; fails the test if it resolves. */
async function failureOf(query: Promise<unknown>): Promise<unknown> {
  try {
    await query;
  } catch (error) {
    return error;
  }
  throw new Error('expected the statement to fail');
}

/** What a caller may see of a translated error: everything it carries, as text. */
function visibleText(error: unknown): string {
  const { message, reason, metadata, fieldViolations } = error as { message: string; reason: string; metadata: unknown; fieldViolations: unknown };
  return JSON.stringify({ message, reason, metadata, fieldViolations });
}

/** Postgres' own words, none of which may reach a caller. */
const POSTGRES_TEXT = /accounts|select|update|statement|transaction \d+|process \d+|deadlock|serializ|canceling|concurrent|relation|tuple|pid/i;

function expectTranslated(raw: unknown, sqlState: string, reason: string, code: number): void {
  expect(sqlStateOf(raw)).toBe(sqlState);
  const translated = translateDatabaseError(raw);
  expect(isDocketError(translated)).toBe(true);
  expect(translated).toMatchObject({ reason, grpcCode: code, metadata: {}, fieldViolations: [] });
  expect((translated as Error).cause).toBeUndefined();
  expect(visibleText(translated)).not.toMatch(POSTGRES_TEXT);
}

describe('translateDatabaseError on real Postgres failures', () => {
  it('turns a statement timeout (57014) into DEADLINE_EXCEEDED', async () => {
    const holder = await connect();
    const waiter = await connect();
    await holder.query('begin');
    await holder.query('select * from accounts where id = 1 for update');
    try {
      await waiter.query("set statement_timeout = '200ms'");
      const raw = await failureOf(waiter.query('update accounts set balance = balance - 1 where id = 1'));
      expect((raw as Error).message).toMatch(/statement timeout/);
      expectTranslated(raw, '57014', 'DEADLINE_EXCEEDED', GRPC_CODE.DEADLINE_EXCEEDED);
      expect((translateDatabaseError(raw) as Error).message).toBe('the deadline passed before the database answered');
    } finally {
      await holder.query('rollback');
      await waiter.query('reset statement_timeout');
    }
  });

  it('turns a deadlock (40P01) into UNAVAILABLE', async () => {
    const first = await connect();
    const second = await connect();
    const observer = await connect();
    await first.query('begin');
    await second.query('begin');
    // The first waits far longer before checking for a deadlock, so the second is the one Postgres aborts.
    await first.query("set local deadlock_timeout = '30s'");
    await second.query("set local deadlock_timeout = '100ms'");
    await first.query('update accounts set balance = balance - 1 where id = 1');
    await second.query('update accounts set balance = balance - 1 where id = 2');
    const firstWaits = first.query('update accounts set balance = balance + 1 where id = 2');
    await untilWaitingForALock(observer, 'nobody waited for a lock');
    const raw = await failureOf(second.query('update accounts set balance = balance + 1 where id = 1'));
    await firstWaits;
    await first.query('rollback');
    await second.query('rollback');
    expect((raw as Error).message).toMatch(/deadlock detected/);
    expectTranslated(raw, '40P01', 'UNAVAILABLE', GRPC_CODE.UNAVAILABLE);
    expect((translateDatabaseError(raw) as Error).message).toBe('the database is temporarily unavailable');
  });

  it('turns a serialization failure (40001) into UNAVAILABLE', async () => {
    const first = await connect();
    const second = await connect();
    await first.query('begin isolation level serializable');
    await second.query('begin isolation level serializable');
    // Write skew: each reads both rows, then writes one the other read.
    await first.query('select sum(balance) from accounts');
    await second.query('select sum(balance) from accounts');
    await first.query('update accounts set balance = balance - 10 where id = 1');
    await second.query('update accounts set balance = balance - 10 where id = 2');
    await first.query('commit');
    const raw = await failureOf(second.query('commit'));
    expect((raw as Error).message).toMatch(/could not serialize access/);
    expectTranslated(raw, '40001', 'UNAVAILABLE', GRPC_CODE.UNAVAILABLE);
    expect((translateDatabaseError(raw) as Error).message).toBe('the database is temporarily unavailable');
  });

  it('leaves any other database failure untranslated, for the INTERNAL path', async () => {
    const client = await connect();
    const raw = await failureOf(client.query('select * from no_such_table'));
    expect(sqlStateOf(raw)).toBe('42P01');
    expect(translateDatabaseError(raw)).toBe(raw);
  });
});

import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigratedTestDatabase } from '../../../../test/support/database.js';
import { openSql } from '../../../../test/support/sql.js';

/*
 * The queue statistics triggers run inside every write statement that
 * admits, moves or deletes jobs. On a PostgreSQL with JIT (Debian's, most
 * managed services) a statement whose plan is priced above
 * `jit_above_cost` is compiled with LLVM first, about 350 ms, so these
 * functions run with JIT off (migration 0015; the embedded binaries have
 * no JIT, so this is checked as the functions' settings).
 */

let sql: pg.Client;

beforeAll(async () => {
  sql = await openSql(await createMigratedTestDatabase('queue stats triggers'));
});

afterAll(async () => {
  await sql?.end();
});

describe('the queue statistics triggers', () => {
  it('run with JIT off', async () => {
    const { rows } = await sql.query<{ proname: string; proconfig: string[] | null }>(
      "select proname, proconfig from pg_proc where proname like 'docket_queue_stats_%' order by proname",
    );
    expect(rows.map((row) => row.proname)).toEqual(['docket_queue_stats_deleted', 'docket_queue_stats_inserted', 'docket_queue_stats_updated']);
    for (const row of rows) expect(row.proconfig, row.proname).toContain('jit=off');
  });
});

import pg from 'pg';
import { createLogger } from '@docket/service-kit';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/database.js';
import { STATE_TYPE_PARSERS, openPool } from './pool.js';

const parserOf = (oid: number) => (STATE_TYPE_PARSERS.getTypeParser as (oid: number, format?: 'text' | 'binary') => (value: string) => unknown)(oid, 'text');
const globalParserOf = (oid: number) => (pg.types.getTypeParser as (oid: number, format?: 'text' | 'binary') => (value: string) => unknown)(oid, 'text');

describe('STATE_TYPE_PARSERS', () => {
  it('reads int8 as an exact bigint, beyond 2^53 and below zero', () => {
    expect(parserOf(20)('9007199254740993')).toBe(9_007_199_254_740_993n);
    expect(parserOf(20)('-9223372036854775808')).toBe(-(2n ** 63n));
    expect(parserOf(20)('0')).toBe(0n);
  });

  it('reads int8[] as bigints, nulls and nested dimensions kept', () => {
    expect(parserOf(1016)('{1,NULL,9007199254740993}')).toEqual([1n, null, 9_007_199_254_740_993n]);
    expect(parserOf(1016)('{{1,2},{3,4}}')).toEqual([
      [1n, 2n],
      [3n, 4n],
    ]);
  });

  it('leaves every other type to pg, and pg\u2019s global parsers untouched', () => {
    expect(parserOf(23)('42')).toBe(42);
    expect(parserOf(25)('9007199254740993')).toBe('9007199254740993');
    expect(parserOf(1184)('2026-12-01 10:00:00+00')).toEqual(new Date('2026-12-01T10:00:00.000Z'));
    expect(globalParserOf(20)('9007199254740993')).toBe('9007199254740993');
  });

  it('is what every pool of the state service parses with', async () => {
    const pool = openPool({ connectionString: 'postgres://docket@127.0.0.1:1/docket', max: 1, applicationName: 'pool test', logger: createLogger('state', () => {}) });
    try {
      expect((pool.options as pg.PoolConfig).types).toBe(STATE_TYPE_PARSERS);
    } finally {
      await pool.end();
    }
  });
});

describe('a pool of the state service', () => {
  it('says when it loses an idle connection, by the error\u2019s code only, and opens another for the next query', async () => {
    const lines: string[] = [];
    const url = await createTestDatabase('pool idle loss');
    const pool = openPool({ connectionString: url, max: 1, applicationName: 'pool idle loss', logger: createLogger('state', (line) => lines.push(line)) });
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const { rows } = await pool.query<{ pid: number }>('select pg_backend_pid() as pid');
      await admin.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
      // The terminated backend's notice reaches the idle client as an error event.
      for (let waited = 0; lines.length === 0 && waited < 5_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      const warning = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
      expect(warning).toMatchObject({ level: 'warn', pool: 'pool idle loss', error_code: '57P01' });
      expect(lines[0]).not.toContain('terminating connection');
      expect((await pool.query<{ one: number }>('select 1 as one')).rows[0]?.one).toBe(1);
    } finally {
      await admin.end();
      await pool.end();
    }
  });
});

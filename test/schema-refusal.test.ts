import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, startService, stopAll } from './support/cluster.js';
import { createTestDatabase } from './support/database.js';
import { openSql } from './support/sql.js';

const SECRET = randomBytes(32).toString('base64url');

/** Runs the state service until it exits by itself; its output and exit code. */
function runStateToExit(databaseUrl: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'services/state/dist/main.js')], {
      env: { PATH: process.env['PATH'] ?? '', DOCKET_LISTEN: '127.0.0.1:0', DOCKET_SERVICE_AUTH_SECRET: SECRET, DOCKET_DATABASE_URL: databaseUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`state did not exit by itself; output:\n${output}`));
    }, 30_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** The whole schema and the migration marker, to prove a refusal changed nothing. */
async function schemaFingerprint(sql: pg.Client): Promise<unknown> {
  const columns = await sql.query(
    `select table_name, column_name, data_type from information_schema.columns
     where table_schema = 'public' order by table_name, column_name`,
  );
  const present = await sql.query(`select to_regclass('docket_schema_migrations') is not null as present`);
  const marker = present.rows[0].present ? (await sql.query('select * from docket_schema_migrations order by id')).rows : null;
  return { columns: columns.rows, marker };
}

/** A database migrated by this build, then damaged by `damage`. */
async function damagedDatabase(label: string, damage: string): Promise<{ url: string; sql: pg.Client }> {
  const url = await createTestDatabase(label);
  const state = await startService('state', { DOCKET_SERVICE_AUTH_SECRET: SECRET, DOCKET_DATABASE_URL: url });
  await state.stop();
  const sql = await openSql(url);
  await sql.query(damage);
  return { url, sql };
}

afterAll(stopAll);

describe('startup against a database it must not run on', () => {
  const cases = [
    {
      what: 'a schema migrated by a newer Docket',
      damage: "insert into docket_schema_migrations (id, checksum) values ('29991231-0001-from-the-future', 'x')",
      message: /SchemaRefusal.*29991231-0001-from-the-future.*newer Docket.*refusing to start/,
    },
    {
      what: 'a half-migrated schema (a table a recorded migration created is missing)',
      damage: 'drop table idempotency_records',
      message: /SchemaRefusal.*half-migrated.*idempotency_records.*refusing to start/,
    },
    {
      what: 'Docket tables without the migration marker',
      damage: 'drop table docket_schema_migrations',
      message: /SchemaRefusal.*no docket_schema_migrations marker.*refusing to start/,
    },
    {
      what: 'a recorded migration that differs from this build',
      damage: "update docket_schema_migrations set checksum = 'tampered'",
      message: /SchemaRefusal.*differs from this build.*refusing to start/,
    },
  ];

  for (const { what, damage, message } of cases) {
    it(`refuses ${what} with a clear message, exit code 1, and changes nothing`, async () => {
      const { url, sql } = await damagedDatabase(what, damage);
      try {
        const before = await schemaFingerprint(sql);
        const { code, output } = await runStateToExit(url);
        expect(code).toBe(1);
        expect(output).toMatch(message);
        expect(output).not.toContain(url);
        expect(await schemaFingerprint(sql)).toEqual(before);
      } finally {
        await sql.end();
      }
    });
  }

  it('migrates an empty database once, even when two state processes start at the same moment', async () => {
    const url = await createTestDatabase('concurrent migration');
    const env = { DOCKET_SERVICE_AUTH_SECRET: SECRET, DOCKET_DATABASE_URL: url };
    const [first, second] = await Promise.all([startService('state', env), startService('state', env)]);
    const sql = await openSql(url);
    try {
      const marker = await sql.query('select id from docket_schema_migrations');
      const all = ['20261129-0001-initial', '20261129-0002-job-changes', '20261129-0003-execution', '20261201-0004-human-loop', '20261201-0005-after-the-end'];
      expect(marker.rows).toEqual(all.map((id) => ({ id })));
      const ready = [...first.logs, ...second.logs].filter((line) => line.includes('"schema ready"'));
      expect(ready).toHaveLength(2);
      expect(ready.filter((line) => line.includes(`"applied":${JSON.stringify(all)}`))).toHaveLength(1);
      expect(ready.filter((line) => line.includes('"applied":[]'))).toHaveLength(1);
    } finally {
      await sql.end();
      await first.stop();
      await second.stop();
    }
  });
});

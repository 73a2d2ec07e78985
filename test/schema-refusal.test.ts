import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, startService, stopAll } from './support/cluster.js';
import { createMigratedTestDatabase, createTestDatabase } from './support/database.js';
import { openSql } from './support/sql.js';

const SECRET = randomBytes(32).toString('base64url');

/**
 * The newest migration that creates a relation: a marker that lost its row
 * (and every later one) still has that relation, which is the damage the
 * migrator must see. A migration that only replaces a function is simply
 * applied again, which is harmless, so losing its row alone is not damage.
 */
const { MIGRATIONS } = (await import(pathToFileURL(join(REPO_ROOT, 'services/state/dist/db/migrations/index.js')).href)) as {
  MIGRATIONS: readonly { id: string; creates: readonly string[] }[];
};
const LATEST_CREATING_MIGRATION = MIGRATIONS.findLast((migration) => migration.creates.length > 0)?.id ?? '';

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
    // Real time: a timeout race, the bound on the state service exiting by itself.
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

/**
 * The whole schema Docket owns and the migration marker, read straight from
 * the catalogs (not through the code under test), to prove that a refusal
 * changed nothing.
 */
async function schemaFingerprint(sql: pg.Client): Promise<unknown> {
  const owned = `('public', 'docket_approval_history')`;
  const columns = await sql.query(
    `select table_schema, table_name, column_name, data_type, is_nullable, column_default from information_schema.columns
     where table_schema in ${owned} order by 1, 2, 3`,
  );
  const indexes = await sql.query(`select schemaname, indexname, indexdef from pg_indexes where schemaname in ${owned} order by 1, 2`);
  const constraints = await sql.query(
    `select conrelid::regclass::text as relation, conname, pg_get_constraintdef(oid) as definition from pg_constraint
     where connamespace::regnamespace::text in ${owned} order by 1, 2, 3`,
  );
  const triggers = await sql.query(
    `select t.tgrelid::regclass::text as relation, t.tgname, pg_get_triggerdef(t.oid) as definition
     from pg_trigger t join pg_class c on c.oid = t.tgrelid
     where not t.tgisinternal and c.relnamespace::regnamespace::text in ${owned} order by 1, 2`,
  );
  const functions = await sql.query(
    `select p.oid::regprocedure::text as function, md5(p.prosrc) as body from pg_proc p
     where p.pronamespace::regnamespace::text in ${owned} order by 1`,
  );
  const present = await sql.query(`select to_regclass('docket_schema_migrations') is not null as present`);
  const marker = present.rows[0].present ? (await sql.query('select * from docket_schema_migrations order by id')).rows : null;
  return { columns: columns.rows, indexes: indexes.rows, constraints: constraints.rows, triggers: triggers.rows, functions: functions.rows, marker };
}

/** A database migrated by this build, then damaged by `damage`. */
async function damagedDatabase(label: string, damage: string): Promise<{ url: string; sql: pg.Client }> {
  const url = await createMigratedTestDatabase(label);
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
      what: 'a half-migrated schema (a table a recorded migration created is missing, a later one still to apply)',
      damage: `delete from docket_schema_migrations where id = (select max(id) from docket_schema_migrations);
               drop table idempotency_records`,
      message: /SchemaRefusal.*half-migrated.*idempotency_records.*refusing to start/,
    },
    {
      what: 'a table missing at the current version',
      damage: 'drop table idempotency_records',
      message: /SchemaRefusal.*schema differs from this build's.*table idempotency_records is missing.*refusing to start/,
    },
    {
      what: 'a marker that lost its latest rows while the tables stayed',
      damage: `delete from docket_schema_migrations where id >= '${LATEST_CREATING_MIGRATION}'`,
      message: /SchemaRefusal.*records migrations up to .* but has relations that only later migrations create.*refusing to start/,
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
    {
      what: 'a dropped column',
      damage: 'alter table jobs drop column label',
      message: /SchemaRefusal.*column jobs\.label is missing.*refusing to start/,
    },
    {
      what: 'a dropped column that indexes relied on',
      damage: 'alter table jobs drop column queue',
      message: /SchemaRefusal.*column jobs\.queue is missing.*index jobs_claimable on jobs is missing.*refusing to start/,
    },
    {
      what: 'a column whose type changed',
      damage: 'alter table jobs alter column priority type bigint',
      message: /SchemaRefusal.*column jobs\.priority has type bigint, expected integer.*refusing to start/,
    },
    {
      what: 'a column that lost its not-null constraint',
      damage: 'alter table attempts alter column queue drop not null',
      message: /SchemaRefusal.*column attempts\.queue is nullable, expected not null.*refusing to start/,
    },
    {
      what: 'a dropped index',
      damage: 'drop index jobs_claimable',
      message: /SchemaRefusal.*index jobs_claimable on jobs is missing.*refusing to start/,
    },
    {
      what: 'a dropped check constraint',
      damage: 'alter table jobs drop constraint jobs_signal_counters',
      message: /SchemaRefusal.*check constraint jobs_signal_counters on jobs is missing.*refusing to start/,
    },
    {
      what: 'a dropped foreign key',
      damage: 'alter table attempts drop constraint attempts_job_id_fkey',
      message: /SchemaRefusal.*foreign key attempts_job_id_fkey on attempts is missing.*refusing to start/,
    },
    {
      what: 'an emptied migration marker table',
      damage: 'delete from docket_schema_migrations',
      message: /SchemaRefusal.*the migrations marker table docket_schema_migrations is empty but Docket tables exist.*refusing to start/,
    },
    {
      what: 'an approval history whose rewrite-refusing trigger was dropped',
      damage: 'drop trigger refuse_update_delete on docket_approval_history.decisions',
      message: /SchemaRefusal.*trigger refuse_update_delete on docket_approval_history\.decisions is missing.*refusing to start/,
    },
  ];

  for (const { what, damage, message } of cases) {
    it(`refuses ${what} with a clear message, exit code 1, and changes nothing`, async () => {
      const { url, sql } = await damagedDatabase(what, damage);
      try {
        const before = await schemaFingerprint(sql);
        const { code, output } = await runStateToExit(url);
        expect(code).toBe(1);
        const refusals = output.split('\n').filter((line) => line.includes('SchemaRefusal'));
        expect(refusals).toHaveLength(1);
        expect(refusals[0]).toMatch(message);
        expect(output).not.toContain('the database is unavailable');
        expect(output).not.toContain(url);
        expect(await schemaFingerprint(sql)).toEqual(before);
      } finally {
        await sql.end();
      }
    });
  }

  it('starts on a schema that differs only in what Postgres may vary: constraint and index names, column order, search path', async () => {
    const { url, sql } = await damagedDatabase(
      'varied but equal',
      `alter table jobs rename constraint jobs_status_check to jobs_status_known;
       alter index jobs_claimable rename to jobs_ready_to_claim;
       alter table worker_names drop column generation, add column generation bigint not null;
       do $$ begin execute format('alter database %I set search_path = public, docket_approval_history', current_database()); end $$`,
    );
    try {
      const state = await startService('state', { DOCKET_SERVICE_AUTH_SECRET: SECRET, DOCKET_DATABASE_URL: url });
      await state.stop();
      expect(state.logs.join('\n')).toContain('"schema ready"');
    } finally {
      await sql.end();
    }
  });

  it('migrates an empty database once, even when two state processes start at the same moment', async () => {
    const url = await createTestDatabase('concurrent migration');
    const env = { DOCKET_SERVICE_AUTH_SECRET: SECRET, DOCKET_DATABASE_URL: url };
    const [first, second] = await Promise.all([startService('state', env), startService('state', env)]);
    const sql = await openSql(url);
    try {
      const marker = await sql.query<{ id: string }>('select id from docket_schema_migrations order by id');
      const ready = [...first.logs, ...second.logs].filter((line) => line.includes('"schema ready"'));
      expect(ready).toHaveLength(2);
      // One process applied every migration this build knows, the other none; each is recorded once.
      const applied = ready.map((line) => (JSON.parse(line) as { applied: string[] }).applied).sort((a, b) => a.length - b.length);
      expect(applied[0]).toEqual([]);
      expect(applied[1]!.length).toBeGreaterThanOrEqual(11);
      expect(marker.rows.map((row) => row.id)).toEqual(applied[1]);
    } finally {
      await sql.end();
      await first.stop();
      await second.stop();
    }
  });
});

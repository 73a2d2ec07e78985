import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { waitForServing } from '@docket/cli';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, startService, stopAll } from './support/cluster.js';
import { createTestDatabase } from './support/database.js';
import { runShell, type ShellResult } from './support/shell.js';
import { openSql } from './support/sql.js';

/**
 * `node services/state/dist/migrate.js`, the Kubernetes migration Job's
 * command, run as built against real Postgres: it migrates and exits 0,
 * is idempotent, leaves a schema the state service starts on without
 * migrating again, and fails with one clear line and exit 1.
 */

const MIGRATE = join(REPO_ROOT, 'services/state/dist/migrate.js');

function runMigrate(env: Record<string, string>): Promise<ShellResult> {
  return runShell(`exec "${process.execPath}" "${MIGRATE}"`, { cwd: REPO_ROOT, env: { PATH: process.env['PATH'] ?? '', ...env }, timeoutMs: 30_000 });
}

/** Every JSON line of a run's stdout; stderr must be empty (no stacks). */
function logLines(result: ShellResult): Record<string, unknown>[] {
  expect(result.stderr).toBe('');
  return result.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

afterAll(stopAll);

describe('state migrate entry', () => {
  it('applies every migration once and exits 0; state then starts without applying any', async () => {
    const url = await createTestDatabase('state-migrate-fresh');
    const first = await runMigrate({ DOCKET_DATABASE_URL: url });
    expect(first.code).toBe(0);
    const [ready, ...more] = logLines(first);
    expect(more).toEqual([]);
    expect(ready).toEqual(expect.objectContaining({ level: 'info', msg: 'schema ready' }));
    const applied = ready!['applied'] as string[];
    expect(applied.length).toBeGreaterThan(1);
    expect(ready!['schema_version']).toBe(applied.at(-1));

    const sql = await openSql(url);
    try {
      const marker = await sql.query<{ id: string }>('select id from docket_schema_migrations order by id');
      expect(marker.rows.map((row) => row.id)).toEqual(applied);
    } finally {
      await sql.end();
    }

    const again = await runMigrate({ DOCKET_DATABASE_URL: url });
    expect(again.code).toBe(0);
    expect(logLines(again)).toEqual([expect.objectContaining({ msg: 'schema ready', applied: [] })]);

    const state = await startService('state', { DOCKET_SERVICE_AUTH_SECRET: randomBytes(32).toString('base64url'), DOCKET_DATABASE_URL: url });
    expect(state.logs.map((line) => JSON.parse(line) as Record<string, unknown>)).toContainEqual(expect.objectContaining({ msg: 'schema ready', applied: [] }));
    await waitForServing(state.url);
    expect(await state.stop()).toBe(0);
  });

  it('refuses a schema from a newer Docket with exit 1, as state does', async () => {
    const url = await createTestDatabase('state-migrate-newer');
    expect((await runMigrate({ DOCKET_DATABASE_URL: url })).code).toBe(0);
    const sql = await openSql(url);
    try {
      await sql.query("insert into docket_schema_migrations (id, checksum) values ('29991231-0001-from-the-future', 'x')");
    } finally {
      await sql.end();
    }
    const refused = await runMigrate({ DOCKET_DATABASE_URL: url });
    expect(refused.code).toBe(1);
    expect(logLines(refused)).toEqual([
      expect.objectContaining({ level: 'error', msg: 'migration failed', error: 'SchemaRefusal', reason: expect.stringMatching(/29991231-0001-from-the-future.*newer Docket/) }),
    ]);
  });

  it('fails in one line, without connection details, when the database is unreachable', async () => {
    const result = await runMigrate({ DOCKET_DATABASE_URL: 'postgres://docket:hunter2@127.0.0.1:1/docket' });
    expect(result.code).toBe(1);
    const lines = logLines(result);
    expect(lines.at(-1)).toEqual(expect.objectContaining({ msg: 'migration failed', error: 'Error', reason: 'the database is unavailable' }));
    expect(result.stdout).not.toMatch(/hunter2|127\.0\.0\.1|docket:/);
  });

  it('requires DOCKET_DATABASE_URL and never starts embedded Postgres', async () => {
    const result = await runMigrate({});
    expect(result.code).toBe(1);
    expect(logLines(result)).toEqual([
      expect.objectContaining({ msg: 'migration failed', reason: 'environment variable DOCKET_DATABASE_URL is required but not set' }),
    ]);
  });
});

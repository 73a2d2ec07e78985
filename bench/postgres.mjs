// The one PostgreSQL every system is measured on, started with durable
// settings (fsync, synchronous_commit and full_page_writes on: the test
// suite's fsync-off cluster would flatter every write path) and
// pg_stat_statements preloaded when the embedded binaries ship it. Each
// system gets its own database on this server.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '@docket/embedded-postgres';

export const DURABLE_SETTINGS = { fsync: 'on', synchronous_commit: 'on', full_page_writes: 'on', max_connections: '400' };

/** The settings read back from the server and recorded with the results. */
const VERIFIED = ['server_version', 'fsync', 'synchronous_commit', 'full_page_writes', 'wal_sync_method', 'max_connections', 'shared_buffers', 'shared_preload_libraries'];

/** Whether the embedded binaries (the platform package embedded-postgres installs) include pg_stat_statements. */
async function shipsPgStatStatements() {
  const { postgres } = await import(`@embedded-postgres/${platform()}-${arch()}`);
  return existsSync(join(dirname(dirname(postgres)), 'lib', 'postgresql', 'pg_stat_statements.so'));
}

/** Runs `sql` on `url` with a short-lived client. */
export async function query(url, sql, values = []) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, values)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Starts the durable server in a temporary directory. Throws if a durable
 * setting does not read back as `on`.
 */
export async function startDurablePostgres() {
  const statements = await shipsPgStatStatements();
  const settings = { ...DURABLE_SETTINGS, ...(statements ? { shared_preload_libraries: 'pg_stat_statements' } : {}) };
  const dataDir = mkdtempSync(join(tmpdir(), 'docket-bench-'));
  const server = await startEmbeddedPostgres({ dataDir: join(dataDir, 'pg'), persistent: false, settings });
  const rows = await query(server.adminUrl, `select name, setting, unit from pg_settings where name = any($1)`, [VERIFIED]);
  const verified = Object.fromEntries(rows.map((row) => [row.name, row.unit ? `${row.setting} (${row.unit})` : row.setting]));
  for (const name of ['fsync', 'synchronous_commit', 'full_page_writes']) {
    if (verified[name] !== 'on') {
      await server.stop();
      throw new Error(`PostgreSQL came up with ${name}=${verified[name]}; the benchmark needs it on`);
    }
  }
  return {
    adminUrl: server.adminUrl,
    /** `show`-verified settings, for the results file. */
    settings: verified,
    pgStatStatements: statements,
    /** Creates database `name` (with pg_stat_statements when `withStatements`) and returns its URL. */
    async createDatabase(name, { withStatements = false } = {}) {
      const url = await server.createDatabase(name);
      if (withStatements && statements) await query(url, 'create extension if not exists pg_stat_statements');
      return url;
    },
    async stop() {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

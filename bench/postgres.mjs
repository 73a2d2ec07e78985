// The one PostgreSQL every system is measured on, started with durable
// settings (fsync, synchronous_commit and full_page_writes on: the test
// suite's fsync-off cluster would flatter every write path) and
// pg_stat_statements preloaded when the embedded binaries ship it. Each
// system gets its own database on this server. The cluster outlives a
// stop of the server process, so `restart()` can take it down and bring it
// back on the same port and data directory (the fixed-rate scenario); the
// temporary directory goes with `stop()` or this process's exit.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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

/** The signal of each PostgreSQL shutdown mode (the postmaster's: SIGINT fast, SIGQUIT immediate). */
const SHUTDOWN_SIGNALS = { fast: 'SIGINT', immediate: 'SIGQUIT' };

/**
 * Starts the durable server in a temporary directory. Throws if a durable
 * setting does not read back as `on`.
 */
export async function startDurablePostgres() {
  const statements = await shipsPgStatStatements();
  const settings = { ...DURABLE_SETTINGS, ...(statements ? { shared_preload_libraries: 'pg_stat_statements' } : {}) };
  const dataDir = mkdtempSync(join(tmpdir(), 'docket-bench-'));
  // Persistent, so that stopping the server keeps the cluster for a restart;
  // the temporary directory is removed by stop() or, failing that, at exit
  // (after the embedded package's own exit hook has signalled the server).
  const removeDataDir = () => rmSync(dataDir, { recursive: true, force: true });
  const start = (port) => startEmbeddedPostgres({ dataDir: join(dataDir, 'pg'), persistent: true, port, settings });
  let server;
  try {
    server = await start();
  } catch (error) {
    removeDataDir();
    throw error;
  }
  process.once('exit', removeDataDir);
  const rows = await query(server.adminUrl, `select name, setting, unit from pg_settings where name = any($1)`, [VERIFIED]);
  const verified = Object.fromEntries(rows.map((row) => [row.name, row.unit ? `${row.setting} (${row.unit})` : row.setting]));
  for (const name of ['fsync', 'synchronous_commit', 'full_page_writes']) {
    if (verified[name] !== 'on') {
      await server.stop();
      removeDataDir();
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
    /**
     * Shuts the server down (`mode` 'fast': open transactions rolled back,
     * a checkpoint, exit; 'immediate': every process quits at once and the
     * start replays the WAL, as after a crash) and starts it again on the
     * same port and data directory. Resolves with the wall-clock times
     * (epoch ms) the shutdown began, the server was gone and it accepted
     * connections again.
     */
    async restart(mode = 'fast') {
      const signal = SHUTDOWN_SIGNALS[mode];
      if (!signal) throw new Error(`unknown shutdown mode ${mode}; known: ${Object.keys(SHUTDOWN_SIGNALS).join(', ')}`);
      const began = Date.now();
      const postmasterPid = Number(readFileSync(join(server.dataDir, 'pgdata', 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(postmasterPid, signal);
      await server.exited;
      await server.stop(); // already gone: only the embedded package's bookkeeping
      const down = Date.now();
      server = await start(server.port);
      return { mode, beganAt: began, downAt: down, upAt: Date.now() };
    },
    async stop() {
      await server.stop();
      removeDataDir();
      process.off('exit', removeDataDir);
    },
  };
}

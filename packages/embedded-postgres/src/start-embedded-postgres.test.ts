import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedPostgresError } from './embedded-postgres-error.js';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from './start-embedded-postgres.js';

const scratch: string[] = [];
const running: EmbeddedPostgresHandle[] = [];

afterAll(async () => {
  await Promise.all(running.map((server) => server.stop()));
  await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A fresh parent folder: mkdtemp makes it 0700, the case root must fix up. */
async function scratchDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'docket-embedded-pg-'));
  scratch.push(dir);
  return dir;
}

async function start(
  options: Parameters<typeof startEmbeddedPostgres>[0],
): Promise<EmbeddedPostgresHandle> {
  const server = await startEmbeddedPostgres(options);
  running.push(server);
  return server;
}

async function query<Row extends pg.QueryResultRow>(url: string, sql: string): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<Row>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('startEmbeddedPostgres', () => {
  it('serves a fresh cluster on a free port and deletes it on stop when not persistent', async () => {
    const dataDir = join(await scratchDir(), 'pg');
    const server = await start({ dataDir, persistent: false });

    expect(server.port).toBeGreaterThan(0);
    expect(server.adminUrl).toMatch(
      new RegExp(`^postgres://postgres:[A-Za-z0-9_-]{32}@127\\.0\\.0\\.1:${server.port}/postgres$`),
    );
    expect(server.timings.initialiseMs).toBeGreaterThan(0);
    const [row] = await query<{ encoding: string; fsync: string }>(
      server.adminUrl,
      `select current_setting('server_encoding') as encoding, current_setting('fsync') as fsync`,
    );
    expect(row).toEqual({ encoding: 'UTF8', fsync: 'off' });
    expect((await stat(join(dataDir, 'password'))).mode & 0o777).toBe(0o600);

    const url = await server.createDatabase('docket');
    expect(await server.createDatabase('docket')).toBe(url); // idempotent
    const [db] = await query<{ name: string }>(url, 'select current_database() as name');
    expect(db?.name).toBe('docket');

    await server.stop();
    await server.exited;
    await expect(stat(dataDir)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(query(server.adminUrl, 'select 1')).rejects.toThrow();
  });

  it.runIf(process.getuid?.() === 0)(
    'as root, makes the parent of the data directory traversable for the postgres user',
    async () => {
      const parent = await scratchDir();
      expect((await stat(parent)).mode & 0o001).toBe(0); // mkdtemp: 0700
      const server = await start({ dataDir: join(parent, 'pg'), persistent: false });
      expect((await stat(parent)).mode & 0o001).toBe(0o001);
      await server.stop();
    },
  );

  describe('persistent', () => {
    /**
     * A persistent cluster of this test's own, initialised and stopped,
     * holding database `app` with one note: no test depends on another
     * having run first, or on what another left behind.
     */
    async function stoppedClusterWithNote(): Promise<string> {
      const dataDir = join(await scratchDir(), 'pg');
      const server = await start({ dataDir, persistent: true });
      await query(await server.createDatabase('app'), `create table notes (body text); insert into notes values ('kept')`);
      await server.stop();
      return dataDir;
    }

    it('keeps data, password and cluster across a restart', async () => {
      const dataDir = join(await scratchDir(), 'pg');
      const first = await start({ dataDir, persistent: true });
      const appUrl = await first.createDatabase('app');
      await query(appUrl, `create table notes (body text); insert into notes values ('kept')`);
      await first.stop();
      const password = await readFile(join(dataDir, 'password'), 'utf8');

      const second = await start({ dataDir, persistent: true });
      expect(second.timings.initialiseMs).toBeNull();
      expect(await readFile(join(dataDir, 'password'), 'utf8')).toBe(password);
      const rows = await query<{ body: string }>(await second.createDatabase('app'), 'select body from notes');
      expect(rows).toEqual([{ body: 'kept' }]);
      await second.stop();
      expect((await stat(join(dataDir, 'pgdata', 'PG_VERSION'))).isFile()).toBe(true);
    });

    it('refuses a second server on a cluster that is running', async () => {
      const dataDir = await stoppedClusterWithNote();
      const server = await start({ dataDir, persistent: true });
      const error = await startEmbeddedPostgres({ dataDir, persistent: true }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EmbeddedPostgresError);
      expect((error as Error).message).toMatch(/already running/);
      await server.stop();
    });

    it('recovers after a crash whose postmaster.pid names a reused pid', async () => {
      const dataDir = await stoppedClusterWithNote();
      const server = await start({ dataDir, persistent: true });
      const pidFile = join(dataDir, 'pgdata', 'postmaster.pid');
      const pid = Number.parseInt((await readFile(pidFile, 'utf8')).split('\n')[0] ?? '', 10);
      process.kill(pid, 'SIGKILL');
      await server.exited;

      // The crashed server's pid now belongs to an unrelated live process.
      const impostor = spawn('sleep', ['30'], { stdio: 'ignore' });
      try {
        const content = await readFile(pidFile, 'utf8');
        await writeFile(pidFile, content.replace(/^\d+/, String(impostor.pid)));
        const logs: string[] = [];
        const restarted = await start({ dataDir, persistent: true, onLog: (line) => logs.push(line) });
        expect(logs.join('\n')).toContain('removed stale postmaster.pid');
        const rows = await query<{ body: string }>(
          await restarted.createDatabase('app'),
          'select body from notes',
        );
        expect(rows).toEqual([{ body: 'kept' }]);
        await restarted.stop();
      } finally {
        impostor.kill('SIGKILL');
      }
    });

    it("rejects with Postgres' own log when the port is taken", async () => {
      const dataDir = await stoppedClusterWithNote();
      const blocker: Server = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      const address = blocker.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      try {
        const error = await startEmbeddedPostgres({ dataDir, persistent: true, port }).catch(
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(EmbeddedPostgresError);
        expect((error as Error).message).toMatch(/exited during startup/);
        expect((error as Error).message).toMatch(/could not bind IPv4 address.*Address already in use/);
      } finally {
        blocker.close();
      }
    });

    it("rejects with Postgres' own log on an invalid setting", async () => {
      const dataDir = await stoppedClusterWithNote();
      const error = await startEmbeddedPostgres({
        dataDir,
        persistent: true,
        settings: { shared_buffers: 'plenty' },
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EmbeddedPostgresError);
      expect((error as EmbeddedPostgresError).logTail.join('\n')).toMatch(
        /invalid value for parameter "shared_buffers"/,
      );
    });
  });
});

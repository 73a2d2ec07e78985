import { rmSync } from 'node:fs';
import { chown, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { readOrCreatePassword } from './cluster-password.js';
import { createDatabase } from './create-database.js';
import { EmbeddedPostgresError } from './embedded-postgres-error.js';
import { pickFreePort } from './free-port.js';
import { initialiseCluster } from './initialise-cluster.js';
import { LogTail } from './log-tail.js';
import { chownTree, ensureTraversable, resolvePostgresIdentity } from './os-identity.js';
import { findPostgresBinaries } from './postgres-binaries.js';
import { startPostmaster, type Postmaster } from './postmaster.js';
import { clearStalePostmasterPid } from './stale-postmaster-pid.js';
import { stopAtExit } from './stop-at-exit.js';

const HOST = '127.0.0.1';
const LOG_TAIL_LINES = 60;
const PORT_ATTEMPTS = 3;

/** Options for {@link startEmbeddedPostgres}. */
export interface StartEmbeddedPostgresOptions {
  /**
   * A directory this package owns: it holds `pgdata/` (the cluster) and
   * `password` (the superuser password, mode 0600). Created when missing.
   */
  readonly dataDir: string;
  /** TCP port on 127.0.0.1; 0 or omitted picks a free one. */
  readonly port?: number;
  /**
   * true keeps the cluster across stops and restarts (`npm start`); false
   * deletes `dataDir` on `stop()` and trades durability for speed
   * (`fsync=off`, `full_page_writes=off`), which is what tests want.
   */
  readonly persistent: boolean;
  /** Every line initdb and Postgres write, as it is written. */
  readonly onLog?: (line: string) => void;
  /** Extra server settings (`-c name=value`), e.g. `{ max_connections: '300' }`. */
  readonly settings?: Readonly<Record<string, string>>;
  /** How long to wait for Postgres to accept connections; default 60 s. */
  readonly readyTimeoutMs?: number;
}

/** A running embedded Postgres server. */
export interface EmbeddedPostgresHandle {
  /** `postgres://postgres:<password>@127.0.0.1:<port>/postgres`, the superuser. */
  readonly adminUrl: string;
  readonly port: number;
  /** The resolved data directory. */
  readonly dataDir: string;
  /** Milliseconds spent in initdb (`null` when an existing cluster was reused) and in starting the server. */
  readonly timings: { readonly initialiseMs: number | null; readonly startMs: number };
  /**
   * Settles when the server process exits, whether through `stop()` or not,
   * so a supervisor can notice Postgres dying under it.
   */
  readonly exited: Promise<void>;
  /** Creates database `name` unless it exists and returns its URL (superuser credentials). */
  createDatabase(name: string): Promise<string>;
  /** Fast shutdown; for a non-persistent server, also deletes `dataDir`. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts a real PostgreSQL (the binaries of the `embedded-postgres`
 * package) listening on 127.0.0.1 only, initialising a cluster in
 * `dataDir` if there is none and reusing it otherwise.
 *
 * As root, Postgres runs as the OS user `postgres` (created when missing),
 * `dataDir` is given to that user, and every directory above `dataDir` and
 * the binaries gets `o+x` if it lacks it. A `postmaster.pid` left by a crash
 * is removed when its pid is no longer a Postgres process; a live server on
 * the same cluster is an error. Every failure is an
 * {@link EmbeddedPostgresError} quoting Postgres' own log.
 */
export async function startEmbeddedPostgres(
  options: StartEmbeddedPostgresOptions,
): Promise<EmbeddedPostgresHandle> {
  const dataDir = resolve(options.dataDir);
  const log = new LogTail(LOG_TAIL_LINES, options.onLog);
  try {
    return await start(dataDir, options, log);
  } catch (error) {
    if (!options.persistent) await rm(dataDir, { recursive: true, force: true });
    if (error instanceof EmbeddedPostgresError) throw error;
    throw new EmbeddedPostgresError(
      `could not start embedded Postgres in ${dataDir}: ${(error as Error).message}`,
      log.lines(),
      { cause: error },
    );
  }
}

async function start(
  dataDir: string,
  options: StartEmbeddedPostgresOptions,
  log: LogTail,
): Promise<EmbeddedPostgresHandle> {
  const [identity, binaries] = await Promise.all([
    resolvePostgresIdentity(),
    findPostgresBinaries(),
  ]);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (identity) {
    const note = (message: string): void => log.push(`[embedded-postgres] ${message}`);
    await ensureTraversable(dirname(dataDir), identity, note);
    await ensureTraversable(binaries.installDir, identity, note);
    await chown(dataDir, identity.uid, identity.gid);
  }
  const password = await readOrCreatePassword(join(dataDir, 'password'), identity);
  const clusterDir = join(dataDir, 'pgdata');

  let initialiseMs: number | null = null;
  if (await isCluster(clusterDir)) {
    if (identity && (await stat(clusterDir)).uid !== identity.uid) await chownTree(clusterDir, identity);
    const pidState = await clearStalePostmasterPid(clusterDir);
    if (pidState.kind === 'running') {
      throw new EmbeddedPostgresError(
        `another Postgres (pid ${pidState.pid}) is already running on ${clusterDir}; ` +
          `stop it (kill -INT ${pidState.pid}) or use another data directory`,
      );
    }
    if (pidState.kind === 'removed') {
      log.push(`[embedded-postgres] removed stale postmaster.pid (pid ${pidState.pid ?? '?'} is gone)`);
    }
  } else {
    if (await isNonEmptyDir(clusterDir)) {
      throw new EmbeddedPostgresError(
        `${clusterDir} exists but holds no Postgres cluster (no PG_VERSION); move it away`,
      );
    }
    await rm(clusterDir, { recursive: true, force: true });
    const began = performance.now();
    await initialiseCluster({
      initdb: binaries.initdb,
      clusterDir,
      passwordFile: join(dataDir, 'password'),
      identity,
      log,
      durable: options.persistent,
    });
    initialiseMs = performance.now() - began;
  }

  const settings: Record<string, string> = options.persistent
    ? {}
    : { fsync: 'off', full_page_writes: 'off' };
  Object.assign(settings, options.settings);
  const began = performance.now();
  const { postmaster, port } = await startOnPort(options.port, (port) =>
    startPostmaster({
      postgres: binaries.postgres,
      clusterDir,
      host: HOST,
      port,
      identity,
      settings,
      log,
      readyTimeoutMs: options.readyTimeoutMs ?? 60_000,
    }),
  );
  const startMs = performance.now() - began;

  const adminUrl = `postgres://postgres:${encodeURIComponent(password)}@${HOST}:${port}/postgres`;
  let stopping: Promise<void> | undefined;
  // Postgres runs in its own process group, so nothing stops it when this process ends without
  // calling `stop()`: then it is asked for a fast shutdown, and a non-persistent dataDir is deleted.
  const withdrawExitStop = stopAtExit(() => {
    postmaster.signal('SIGINT');
    if (!options.persistent) rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    adminUrl,
    port,
    dataDir,
    timings: { initialiseMs, startMs },
    exited: postmaster.exited.then(() => undefined),
    createDatabase: (name) => createDatabase(adminUrl, name),
    stop: () => {
      stopping ??= (async () => {
        await postmaster.stop();
        withdrawExitStop();
        if (!options.persistent) await rm(dataDir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}

/**
 * Starts on the requested port, or on a free one, retrying with another
 * free port when the chosen one was taken in the meantime.
 */
async function startOnPort(
  requested: number | undefined,
  startAt: (port: number) => Promise<Postmaster>,
): Promise<{ postmaster: Postmaster; port: number }> {
  if (requested) return { postmaster: await startAt(requested), port: requested };
  for (let attempt = 1; ; attempt++) {
    const port = await pickFreePort(HOST);
    try {
      return { postmaster: await startAt(port), port };
    } catch (error) {
      const portTaken =
        error instanceof EmbeddedPostgresError &&
        error.logTail.some((line) => line.includes('Address already in use'));
      if (!portTaken || attempt >= PORT_ATTEMPTS) throw error;
    }
  }
}

async function isCluster(dir: string): Promise<boolean> {
  return stat(join(dir, 'PG_VERSION')).then(
    () => true,
    () => false,
  );
}

async function isNonEmptyDir(dir: string): Promise<boolean> {
  return readdir(dir).then(
    (entries) => entries.length > 0,
    () => false,
  );
}

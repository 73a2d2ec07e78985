import { EmbeddedPostgresError } from './embedded-postgres-error.js';
import type { LogTail } from './log-tail.js';
import type { OsIdentity } from './os-identity.js';
import { describeExit, spawnPostgresProgram, type ProgramExit } from './postgres-program.js';

const READY = 'database system is ready to accept connections';

/** Options for {@link startPostmaster}. */
export interface StartPostmasterOptions {
  readonly postgres: string;
  readonly clusterDir: string;
  readonly host: string;
  readonly port: number;
  readonly identity: OsIdentity | undefined;
  /** Extra server settings, each passed as `-c name=value`. */
  readonly settings: Readonly<Record<string, string>>;
  readonly log: LogTail;
  readonly readyTimeoutMs: number;
}

/** A running Postgres server process. */
export interface Postmaster {
  readonly pid: number;
  /** Settles when the server process has exited, for whatever reason. */
  readonly exited: Promise<ProgramExit>;
  /**
   * Fast shutdown (SIGINT: roll back open transactions, checkpoint, exit),
   * escalating to SIGQUIT and then SIGKILL if the server does not exit.
   * Safe to call more than once and after the process has died.
   */
  stop(): Promise<void>;
  /** Sends `signal` without waiting: for `process.on('exit')` hooks, which cannot wait. */
  signal(signal: NodeJS.Signals): void;
}

/**
 * Starts `postgres` on `host:port` with Unix sockets disabled (nothing is
 * written to /tmp or /var/run), in its own process group, and resolves once
 * it logs that it accepts connections. Rejects with
 * {@link EmbeddedPostgresError}, quoting the log, if it exits first or is
 * not ready in time.
 *
 * The own process group means a Ctrl-C in the terminal reaches only the
 * parent, which can then stop Postgres last, after the services using it.
 */
export async function startPostmaster(options: StartPostmasterOptions): Promise<Postmaster> {
  const settings: Record<string, string> = {
    listen_addresses: options.host,
    unix_socket_directories: '',
    ...options.settings,
  };
  const args = ['-D', options.clusterDir, '-p', String(options.port)];
  for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);

  let markReady!: () => void;
  const ready = new Promise<'ready'>((resolve) => (markReady = () => resolve('ready')));
  const { child, exited } = spawnPostgresProgram(options.postgres, args, {
    identity: options.identity,
    cwd: options.clusterDir,
    detached: true,
    onLine: (line) => {
      options.log.push(line);
      if (line.includes(READY)) markReady();
    },
  });

  const stop = async (): Promise<void> => {
    for (const [signal, waitMs] of [
      ['SIGINT', 30_000],
      ['SIGQUIT', 5_000],
      ['SIGKILL', 5_000],
    ] as const) {
      if (child.exitCode !== null || child.signalCode !== null) break;
      child.kill(signal);
      if (await settlesWithin(exited, waitMs)) break;
    }
    await exited;
  };

  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    ready,
    exited,
    new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), options.readyTimeoutMs);
    }),
  ]);
  clearTimeout(timer);
  if (outcome === 'timeout') {
    await stop();
    throw new EmbeddedPostgresError(
      `Postgres did not accept connections within ${options.readyTimeoutMs} ms`,
      options.log.lines(),
    );
  }
  if (outcome !== 'ready') {
    throw new EmbeddedPostgresError(
      `Postgres exited during startup (${describeExit(outcome)})`,
      options.log.lines(),
    );
  }
  return {
    pid: child.pid ?? 0,
    exited,
    stop,
    signal: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    promise.then(() => true),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]);
  clearTimeout(timer);
  return settled;
}

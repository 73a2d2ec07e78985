import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { OsIdentity } from './os-identity.js';

const DRAIN_GRACE_MS = 2_000;

/** How a Postgres program ended. */
export interface ProgramExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A spawned Postgres program whose output is forwarded line by line. */
export interface RunningProgram {
  readonly child: ChildProcess;
  /** Settles once the process has exited and its output is drained; never rejects. */
  readonly exited: Promise<ProgramExit>;
}

/** Options for {@link spawnPostgresProgram}. */
export interface SpawnPostgresProgramOptions {
  readonly identity: OsIdentity | undefined;
  /** Receives every line of stdout and stderr (Postgres logs to stderr). */
  readonly onLine: (line: string) => void;
  /** A directory the program's user can enter; Postgres programs dislike an unreadable cwd. */
  readonly cwd: string;
  /**
   * Own process group: a Ctrl-C in the terminal then reaches only the parent,
   * which stops Postgres last, after the services that use it.
   */
  readonly detached: boolean;
}

/**
 * Spawns `initdb` or `postgres` as the Postgres OS user with a minimal,
 * English-speaking environment (readiness is detected from log text) and
 * forwards both output streams line by line.
 */
export function spawnPostgresProgram(
  path: string,
  args: readonly string[],
  options: SpawnPostgresProgramOptions,
): RunningProgram {
  const env: NodeJS.ProcessEnv = { LC_ALL: 'C', LANG: 'C' };
  if (process.env['PATH'] !== undefined) env['PATH'] = process.env['PATH'];
  if (process.env['TZ'] !== undefined) env['TZ'] = process.env['TZ'];
  const child = spawn(path, args, {
    cwd: options.cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached,
    ...(options.identity ?? {}),
  });
  const drained = [child.stdout, child.stderr].map(
    (stream) =>
      new Promise<void>((resolve) => {
        const lines = createInterface({ input: stream, crlfDelay: Infinity });
        lines.on('line', options.onLine);
        lines.on('close', resolve);
      }),
  );
  const exited = new Promise<ProgramExit>((resolve) => {
    child.once('error', (error) => {
      options.onLine(`failed to run ${path}: ${error.message}`);
      resolve({ code: null, signal: null });
    });
    child.once('exit', (code, signal) => {
      // Backends inherit stderr and may outlive a killed postmaster briefly:
      // wait a little for the last lines, not for them.
      const grace = new Promise<void>((done) => setTimeout(done, DRAIN_GRACE_MS).unref());
      void Promise.race([Promise.all(drained), grace]).then(() => resolve({ code, signal }));
    });
  });
  return { child, exited };
}

/** "exit code 1" or "signal SIGKILL", for messages. */
export function describeExit(exit: ProgramExit): string {
  return exit.signal ? `signal ${exit.signal}` : `exit code ${String(exit.code)}`;
}

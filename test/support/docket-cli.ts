import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { until } from './polling.js';
import { REPO_ROOT } from './service-process.js';

/** What a CLI run printed and how it exited. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `docket <args>` as a user runs it: the built CLI in a child process, with only PATH and `env` set. */
export async function runDocket(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<CliRun> {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'packages/cli/dist/main.js'), ...args], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stdout, stderr };
}

/** `docket verify <job_id>` against a cluster's events service with `token`. */
export function docketVerify(eventsUrl: string, token: string, jobId: string): Promise<CliRun> {
  return runDocket(['verify', jobId, '--events-url', eventsUrl, '--token', token]);
}

/** A `docket dev` started by {@link startDocketDev}. */
export interface RunningDocketDev {
  /** The data directory it runs in. */
  readonly dataDir: string;
  /** Each service's port, as `docket dev` was given them. */
  readonly ports: Readonly<Record<'admission' | 'execution' | 'events' | 'state', number>>;
  /** What it printed so far. */
  out(): string;
  err(): string;
  /** The summary's token for `role` (`user` is sub "dev", `worker` sub "dev-worker"). */
  token(role: 'user' | 'worker'): string;
  /** Ctrl-C; resolves with its exit code. */
  interrupt(): Promise<number | null>;
  /** After a failure: Ctrl-C so it stops what it started, SIGKILL if it hangs. */
  kill(): Promise<void>;
}

/**
 * `docket dev <args>` as a user runs it, on free ports, in `dataDir`,
 * against `databaseUrl` (no embedded Postgres), with no console port
 * fixed; resolves once it printed its summary ("Docket is running").
 */
export async function startDocketDev(args: readonly string[], dataDir: string, databaseUrl: string): Promise<RunningDocketDev> {
  const ports = { admission: await freePort(), execution: await freePort(), events: await freePort(), state: await freePort() };
  const child = spawn(process.execPath, [join(REPO_ROOT, 'packages/cli/dist/main.js'), 'dev', ...args], {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '',
      DOCKET_DATA_DIR: dataDir,
      DOCKET_DATABASE_URL: databaseUrl,
      DOCKET_ADMISSION_PORT: String(ports.admission),
      DOCKET_EXECUTION_PORT: String(ports.execution),
      DOCKET_EVENTS_PORT: String(ports.events),
      DOCKET_STATE_PORT: String(ports.state),
      DOCKET_CONSOLE_PORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const dev: RunningDocketDev = {
    dataDir,
    ports,
    out: () => out,
    err: () => err,
    token: (role) => new RegExp(`${role} +\\(sub "${role === 'user' ? 'dev' : 'dev-worker'}"\\) +(\\S+)`).exec(out)?.[1] ?? '',
    interrupt: () => {
      child.kill('SIGINT');
      return exited;
    },
    async kill() {
      if (child.exitCode !== null) return;
      child.kill('SIGINT');
      // Real time: a bound on its shutdown, after a failure.
      const stopped = await Promise.race([exited.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), 40_000))]);
      if (!stopped) child.kill('SIGKILL');
    },
  };
  try {
    await until(async () => out.includes('Docket is running') || child.exitCode !== null, 'docket dev to print its summary', 90_000, 100);
  } catch (error) {
    await dev.kill();
    throw error;
  }
  return dev;
}

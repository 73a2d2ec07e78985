import type { ChildProcess } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
// The launcher is shared with `docket dev`, so tests start services exactly
// the way `npm start` does.
import { launchService, serviceEntryPath, type ServiceExit, type ServiceName } from '@docket/cli';

/** The repository root, two levels above this file. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A service process started by {@link startService}. */
export interface ServiceProcess {
  readonly name: ServiceName;
  /** `http://127.0.0.1:<port>`, from the service's listening line. */
  readonly url: string;
  readonly process: ChildProcess;
  /** Every stdout and stderr line so far, in arrival order. */
  readonly logs: string[];
  /** Settles when the process has exited; never rejects. */
  readonly exited: Promise<ServiceExit>;
  /**
   * Sends `signal` (default SIGTERM: drain and exit) and resolves with the
   * exit code (`null` if killed by a signal); SIGKILLs after the grace period.
   */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** SIGKILL: a crash, for fault-injection tests. */
  kill(): Promise<void>;
  /**
   * Stops the process if it still runs (SIGTERM), then starts the same
   * service with the same environment on the same port, so peers that were
   * given its URL reach the new process.
   */
  restart(): Promise<ServiceProcess>;
}

/** Options for {@link startService}. */
export interface StartServiceOptions {
  /** Script to run instead of `services/<name>/dist/main.js` (test fixtures). */
  readonly entry?: string;
  /** How long the service has to print its listening line; default 30 s. */
  readonly readyTimeoutMs?: number;
  /** How long `stop()` waits before SIGKILL; default 10 s. */
  readonly stopGraceMs?: number;
  /** Called when {@link ServiceProcess.restart} has replaced `previous` by `next`. */
  readonly onRestart?: (previous: ServiceProcess, next: ServiceProcess) => void;
}

/** Processes started by this module and not yet stopped. */
const running = new Set<ServiceProcess>();

/**
 * Starts `node services/<name>/dist/main.js` with only `PATH`, `HOME` and
 * `DOCKET_LISTEN=127.0.0.1:0` inherited, overridden by `env`, and resolves
 * once it prints its listening line. Rejects with an error quoting the
 * captured output if it exits or stays silent first.
 *
 * Every process started here is stopped by {@link stopAll} (call it in
 * `afterAll`) and SIGKILLed when the test process exits, even on failure.
 */
export async function startService(
  name: ServiceName,
  env: Readonly<Record<string, string>>,
  options: StartServiceOptions = {},
): Promise<ServiceProcess> {
  const fullEnv: Record<string, string> = { DOCKET_LISTEN: '127.0.0.1:0' };
  for (const key of ['PATH', 'HOME'] as const) {
    const value = process.env[key];
    if (value !== undefined) fullEnv[key] = value;
  }
  Object.assign(fullEnv, env);

  const logs: string[] = [];
  const launched = launchService({
    name,
    entry: options.entry ?? serviceEntryPath(REPO_ROOT, name),
    env: fullEnv,
    onLine: (line) => logs.push(line),
    ...(options.readyTimeoutMs === undefined ? {} : { readyTimeoutMs: options.readyTimeoutMs }),
  });
  const url = await launched.ready;
  const graceMs = options.stopGraceMs ?? 10_000;

  const service: ServiceProcess = {
    name,
    url,
    process: launched.child,
    logs,
    exited: launched.exited,
    async stop(signal = 'SIGTERM') {
      const exit = await launched.stop(signal, graceMs);
      running.delete(service);
      return exit.code;
    },
    async kill() {
      await launched.kill();
      running.delete(service);
    },
    async restart() {
      await service.stop();
      const { hostname, port } = new URL(url);
      const next = await startService(name, { ...env, DOCKET_LISTEN: `${hostname}:${port}` }, options);
      options.onRestart?.(service, next);
      return next;
    },
  };
  running.add(service);
  void launched.exited.then(() => running.delete(service));
  return service;
}

/**
 * Stops every service process this test file started and has not stopped:
 * SIGTERM to all at once, SIGKILL after the grace period. Meant for
 * `afterAll(stopAll)`.
 */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((service) => service.stop()));
}

import type { ChildProcess } from 'node:child_process';
import { describeExit, superviseChild, type ServiceExit } from './supervised-child.js';

export { describeExit, type ServiceExit } from './supervised-child.js';

/** Options for {@link launchService}. */
export interface LaunchServiceOptions {
  /** Used in messages only. */
  readonly name: string;
  /** The script run with this Node binary, e.g. `services/state/dist/main.js`. */
  readonly entry: string;
  /** The complete environment of the process (nothing is inherited implicitly). */
  readonly env: NodeJS.ProcessEnv;
  /** Every output line, as it arrives. */
  readonly onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** How long the process has to print its listening line; default 30 s. */
  readonly readyTimeoutMs?: number;
  /**
   * Own process group, so a terminal Ctrl-C reaches only the parent, which
   * then stops the services in order. Default false.
   */
  readonly detached?: boolean;
  /** Options for Node itself, before the entry (e.g. `--cpu-prof` for a profile); default none. */
  readonly nodeOptions?: readonly string[];
}

/** A service process started by {@link launchService}. */
export interface LaunchedService {
  readonly name: string;
  readonly child: ChildProcess;
  /**
   * Resolves with the `url` of the service's `{"msg":"listening"}` log line;
   * rejects with {@link ServiceLaunchError} if the process exits or stays
   * silent too long (it is then killed).
   */
  readonly ready: Promise<string>;
  /** Settles when the process has exited and its output is read; never rejects. */
  readonly exited: Promise<ServiceExit>;
  /** The last lines the process printed, for error messages. */
  recentLines(): string[];
  /**
   * Sends `signal` (default SIGTERM, which services answer by draining and
   * exiting 0) and waits; escalates to SIGKILL after `graceMs` (default 20 s).
   */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<ServiceExit>;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<ServiceExit>;
}

/** A service that exited or stayed silent before printing its listening line. */
export class ServiceLaunchError extends Error {
  override readonly name = 'ServiceLaunchError';
  readonly service: string;
  readonly logTail: readonly string[];

  constructor(service: string, summary: string, logTail: readonly string[]) {
    const detail = logTail.length === 0 ? ' (it printed nothing)' : `; its last lines:\n${logTail.join('\n')}`;
    super(`${service} ${summary}${detail}`);
    this.service = service;
    this.logTail = logTail;
  }
}

/**
 * Starts `node <entry>` and follows the service process convention: JSON log
 * lines on stdout, one of them `{"msg":"listening","url":"http://..."}` once
 * the server accepts connections. The process is registered so that it is
 * SIGKILLed if this process exits without stopping it.
 */
export function launchService(options: LaunchServiceOptions): LaunchedService {
  let markReady!: (url: string) => void;
  const listening = new Promise<string>((resolve) => (markReady = resolve));
  const supervised = superviseChild({
    name: options.name,
    file: process.execPath,
    args: [...(options.nodeOptions ?? []), options.entry],
    env: options.env,
    onLine: (line, stream) => {
      options.onLine?.(line, stream);
      const url = parseListeningUrl(line);
      if (url !== undefined) markReady(url);
    },
    ...(options.detached === undefined ? {} : { detached: options.detached }),
  });
  const { exited } = supervised;

  const timeoutMs = options.readyTimeoutMs ?? 30_000;
  let timer: NodeJS.Timeout | undefined;
  const ready = Promise.race([
    listening,
    exited.then((exit): never => {
      throw new ServiceLaunchError(options.name, `exited before listening (${describeExit(exit)})`, supervised.recentLines());
    }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new ServiceLaunchError(options.name, `printed no listening line within ${timeoutMs} ms`, supervised.recentLines()));
        if (supervised.isRunning()) supervised.child.kill('SIGKILL');
      }, timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
  ready.catch(() => undefined); // callers that never await `ready` must not crash the process

  return {
    name: options.name,
    child: supervised.child,
    ready,
    exited,
    recentLines: supervised.recentLines,
    stop: supervised.stop,
    kill: supervised.kill,
  };
}

/**
 * The `url` of a service's listening line, or `undefined` for any other
 * line (including lines that are not JSON).
 */
export function parseListeningUrl(line: string): string | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const record = JSON.parse(line) as { msg?: unknown; url?: unknown };
    return record.msg === 'listening' && typeof record.url === 'string' ? record.url : undefined;
  } catch {
    return undefined;
  }
}

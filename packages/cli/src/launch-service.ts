import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** How a service process ended. */
export interface ServiceExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

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

const TAIL_LINES = 40;
const DRAIN_GRACE_MS = 2_000;

/**
 * Starts `node <entry>` and follows the service process convention: JSON log
 * lines on stdout, one of them `{"msg":"listening","url":"http://..."}` once
 * the server accepts connections. The process is registered so that it is
 * SIGKILLed if this process exits without stopping it.
 */
export function launchService(options: LaunchServiceOptions): LaunchedService {
  const child = spawn(process.execPath, [...(options.nodeOptions ?? []), options.entry], {
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  liveChildren.add(child);
  registerExitHook();

  const tail: string[] = [];
  let markReady!: (url: string) => void;
  const listening = new Promise<string>((resolve) => (markReady = resolve));
  const drained = (['stdout', 'stderr'] as const).map(
    (stream) =>
      new Promise<void>((resolve) => {
        const lines = createInterface({ input: child[stream], crlfDelay: Infinity });
        lines.on('line', (line) => {
          tail.push(line);
          if (tail.length > TAIL_LINES) tail.shift();
          options.onLine?.(line, stream);
          const url = parseListeningUrl(line);
          if (url !== undefined) markReady(url);
        });
        lines.on('close', resolve);
      }),
  );
  const exited = new Promise<ServiceExit>((resolve) => {
    child.once('error', (error) => {
      tail.push(`could not run ${options.entry}: ${error.message}`);
      liveChildren.delete(child);
      resolve({ code: null, signal: null });
    });
    child.once('exit', (code, signal) => {
      liveChildren.delete(child);
      const grace = new Promise<void>((done) => setTimeout(done, DRAIN_GRACE_MS).unref());
      void Promise.race([Promise.all(drained), grace]).then(() => resolve({ code, signal }));
    });
  });

  const isRunning = (): boolean => child.exitCode === null && child.signalCode === null;
  const stop = async (signal: NodeJS.Signals = 'SIGTERM', graceMs = 20_000): Promise<ServiceExit> => {
    if (isRunning()) child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([
      exited.then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), graceMs))),
    ]);
    clearTimeout(timer);
    if (!inTime && isRunning()) child.kill('SIGKILL');
    return exited;
  };

  const timeoutMs = options.readyTimeoutMs ?? 30_000;
  let timer: NodeJS.Timeout | undefined;
  const ready = Promise.race([
    listening,
    exited.then((exit): never => {
      throw new ServiceLaunchError(options.name, `exited before listening (${describeExit(exit)})`, [...tail]);
    }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new ServiceLaunchError(options.name, `printed no listening line within ${timeoutMs} ms`, [...tail]));
        if (isRunning()) child.kill('SIGKILL');
      }, timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
  ready.catch(() => undefined); // callers that never await `ready` must not crash the process

  return {
    name: options.name,
    child,
    ready,
    exited,
    recentLines: () => [...tail],
    stop,
    kill: () => stop('SIGKILL', 5_000),
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

/** "exit code 1" or "signal SIGKILL", for messages. */
export function describeExit(exit: ServiceExit): string {
  return exit.signal ? `signal ${exit.signal}` : `exit code ${String(exit.code)}`;
}

/** Service processes started here that have not exited yet. */
const liveChildren = new Set<ChildProcess>();
let exitHookRegistered = false;

/**
 * Whatever way this process ends (a failed test file, an uncaught error),
 * no service process outlives it.
 */
function registerExitHook(): void {
  if (exitHookRegistered) return;
  exitHookRegistered = true;
  process.once('exit', () => {
    for (const child of liveChildren) child.kill('SIGKILL');
  });
}

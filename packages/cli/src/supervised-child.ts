import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { stopAtExit } from '@docket/embedded-postgres';

/** How a child process ended. */
export interface ServiceExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Options for {@link superviseChild}. */
export interface SuperviseChildOptions {
  /** Used in messages only. */
  readonly name: string;
  /** The executable, e.g. this Node binary or `/usr/sbin/nginx`. */
  readonly file: string;
  readonly args: readonly string[];
  /** The complete environment of the process (nothing is inherited implicitly). */
  readonly env: NodeJS.ProcessEnv;
  /** Every output line, as it arrives. */
  readonly onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /**
   * Own process group, so a terminal Ctrl-C reaches only the parent, which
   * then stops its children in order. Default false.
   */
  readonly detached?: boolean;
}

/** A child process started by {@link superviseChild}. */
export interface SupervisedChild {
  readonly name: string;
  readonly child: ChildProcess;
  /** Settles when the process has exited and its output is read; never rejects. */
  readonly exited: Promise<ServiceExit>;
  /** Whether the process has not exited yet. */
  isRunning(): boolean;
  /** The last lines the process printed, for error messages. */
  recentLines(): string[];
  /**
   * Sends `signal` (default SIGTERM) and waits; escalates to SIGKILL after
   * `graceMs` (default 20 s).
   */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<ServiceExit>;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<ServiceExit>;
}

const TAIL_LINES = 40;
const DRAIN_GRACE_MS = 2_000;

/**
 * Starts `file args...` with its output read line by line, and registers
 * it so that it is SIGKILLed if this process exits without stopping it:
 * the one way `docket dev` and the test clusters run a service process or
 * the nginx front.
 */
export function superviseChild(options: SuperviseChildOptions): SupervisedChild {
  const child = spawn(options.file, [...options.args], {
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  const withdrawExitStop = stopAtExit(() => child.kill('SIGKILL'));

  const tail: string[] = [];
  const drained = (['stdout', 'stderr'] as const).map(
    (stream) =>
      new Promise<void>((resolve) => {
        const lines = createInterface({ input: child[stream], crlfDelay: Infinity });
        lines.on('line', (line) => {
          tail.push(line);
          if (tail.length > TAIL_LINES) tail.shift();
          options.onLine?.(line, stream);
        });
        lines.on('close', resolve);
      }),
  );
  const exited = new Promise<ServiceExit>((resolve) => {
    child.once('error', (error) => {
      tail.push(`could not run ${options.file}: ${error.message}`);
      withdrawExitStop();
      resolve({ code: null, signal: null });
    });
    child.once('exit', (code, signal) => {
      withdrawExitStop();
      const grace = new Promise<void>((done) => setTimeout(done, DRAIN_GRACE_MS).unref());
      void Promise.race([Promise.all(drained), grace]).then(() => resolve({ code, signal }));
    });
  });

  const isRunning = (): boolean => child.pid !== undefined && child.exitCode === null && child.signalCode === null;
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

  return {
    name: options.name,
    child,
    exited,
    isRunning,
    recentLines: () => [...tail],
    stop,
    kill: () => stop('SIGKILL', 5_000),
  };
}

/** "exit code 1" or "signal SIGKILL", for messages. */
export function describeExit(exit: ServiceExit): string {
  return exit.signal ? `signal ${exit.signal}` : `exit code ${String(exit.code)}`;
}

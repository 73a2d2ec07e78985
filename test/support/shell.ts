import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/** How a shell command ended, with everything it printed. */
export interface ShellResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** True when the command ran past its time limit and was killed. */
  readonly timedOut: boolean;
}

/** Options for {@link startShell} and {@link runShell}. */
export interface ShellOptions {
  readonly cwd: string;
  /** The complete environment of the shell (nothing is inherited implicitly). */
  readonly env: NodeJS.ProcessEnv;
  /** Kill the whole process group (SIGKILL) after this long; default 20 s. */
  readonly timeoutMs?: number;
}

/** A script running in `bash -c`, in its own process group, like a terminal's foreground job. */
export interface ShellProcess {
  readonly script: string;
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Settles when the shell has exited and its output is read; never rejects. */
  readonly exited: Promise<ShellResult>;
  /**
   * Resolves once `wanted` matches the output so far (stdout, then stderr), polled every 25 ms; fails after
   * `timeoutMs` or if the shell exits first.
   */
  waitFor(wanted: RegExp | ((stdout: string, stderr: string) => boolean), what: string, timeoutMs?: number): Promise<void>;
  /**
   * Ctrl-C: SIGINT to the whole process group, which is what a terminal
   * sends its foreground job (npm, its `sh -c` and the node process all get it).
   */
  interrupt(): void;
  /** SIGKILL to the whole process group. */
  kill(): void;
}

/** Shells started here that have not exited yet; SIGKILLed if the test process exits first. */
const running = new Set<ShellProcess>();
process.once('exit', () => {
  for (const shell of running) shell.kill();
});

/** Starts `bash -c <script>` in its own process group, stdin from /dev/null, output captured. */
export function startShell(script: string, options: ShellOptions): ShellProcess {
  const child = spawn('bash', ['-c', script], {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let timedOut = false;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const signalGroup = (signal: NodeJS.Signals): void => {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // Already gone.
    }
  };
  // Real time: a timeout race, the bound on the whole script.
  const timer = setTimeout(() => {
    timedOut = true;
    signalGroup('SIGKILL');
  }, options.timeoutMs ?? 20_000);
  let ended = false;
  const exited = new Promise<ShellResult>((resolve) => {
    child.once('error', (error) => {
      stderr += `\n(spawn failed: ${error.message})`;
    });
    // 'close': the process has exited and its output streams are drained.
    child.once('close', (code, signal) => {
      ended = true;
      clearTimeout(timer);
      running.delete(shell);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
  const shell: ShellProcess = {
    script,
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    async waitFor(wanted, what, timeoutMs = 20_000) {
      const matches = typeof wanted === 'function' ? () => wanted(stdout, stderr) : () => wanted.test(stdout) || wanted.test(stderr);
      const deadline = performance.now() + timeoutMs;
      while (!matches()) {
        if (ended) throw new Error(`the shell exited before ${what}:\n${describeShell(shell)}`);
        if (performance.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms:\n${describeShell(shell)}`);
        // Real time: the poll interval of this wait.
        await sleep(25);
      }
    },
    interrupt: () => signalGroup('SIGINT'),
    kill: () => signalGroup('SIGKILL'),
  };
  running.add(shell);
  return shell;
}

/** Runs `bash -c <script>` to completion (see {@link startShell}). */
export async function runShell(script: string, options: ShellOptions): Promise<ShellResult> {
  return startShell(script, options).exited;
}

/** The script and its output so far, for failure messages. */
export function describeShell(shell: ShellProcess | (ShellResult & { script: string })): string {
  const [stdout, stderr] = 'child' in shell ? [shell.stdout(), shell.stderr()] : [shell.stdout, shell.stderr];
  const status = 'child' in shell ? '' : `\n--- exit: ${shell.timedOut ? 'timed out' : (shell.signal ?? shell.code)}`;
  return `--- script:\n${shell.script}${status}\n--- stdout:\n${tail(stdout)}\n--- stderr:\n${tail(stderr)}`;
}

function tail(text: string, max = 4_000): string {
  return text.length <= max ? text : `...${text.slice(-max)}`;
}

/**
 * Every JSON value in `text`, in order: `buf curl` prints each message (and
 * each frame of a stream) as one pretty-printed JSON object, back to back.
 * Text outside JSON values is ignored.
 */
export function jsonValues(text: string): unknown[] {
  const values: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"' && depth > 0) inString = true;
    else if (c === '{' || c === '[') {
      if (depth === 0) start = i;
      depth++;
    } else if ((c === '}' || c === ']') && depth > 0) {
      depth--;
      if (depth === 0) values.push(JSON.parse(text.slice(start, i + 1)));
    }
  }
  return values;
}

import { readFile } from 'node:fs/promises';

/**
 * Stops the process whose pid `pidFile` holds if it still runs `program`
 * on `configFile` (its `/proc/<pid>/cmdline` says so; where there is no
 * /proc nothing is stopped): SIGTERM, SIGKILL after 5 s. Resolves with
 * its pid, or `undefined` when there was none. For a child a killed
 * parent could not stop, which would hold its ports.
 */
export async function stopStaleProcess(pidFile: string, program: string, configFile: string): Promise<number | undefined> {
  const pid = Number((await readIfPresent(pidFile))?.trim());
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  const command = (await readIfPresent(`/proc/${pid}/cmdline`))?.split('\0') ?? [];
  if (!command[0]?.endsWith(program) || !command.includes(configFile)) return undefined;
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    if (!(await isRunning(pid))) break;
    process.kill(pid, signal);
    const deadline = performance.now() + 5_000;
    while ((await isRunning(pid)) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return pid;
}

/** Whether `pid` is a process that has not exited (a zombie, exited but not reaped, holds no port). */
async function isRunning(pid: number): Promise<boolean> {
  const stat = await readIfPresent(`/proc/${pid}/stat`);
  return stat !== undefined && !/^\d+ \(.*\) Z/.test(stat);
}

/** A file's text, or `undefined` if it (or the process it describes) does not exist. */
async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ESRCH') return undefined;
    throw error;
  }
}

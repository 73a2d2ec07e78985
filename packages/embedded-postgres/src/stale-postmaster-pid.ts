import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** What {@link clearStalePostmasterPid} found. */
export type PostmasterPidState =
  | { readonly kind: 'absent' }
  | { readonly kind: 'removed'; readonly pid: number | undefined }
  | { readonly kind: 'running'; readonly pid: number };

/**
 * After a crash (SIGKILL, power loss, container restart) `postmaster.pid`
 * stays behind. Postgres itself ignores it when the recorded pid is dead, but
 * refuses to start when that pid has since been reused by an unrelated
 * process, which is common in containers where pids restart from 1. This
 * removes the file when its pid is dead, a zombie, or not a `postgres`
 * process, and reports `running` (leaving the file alone) when a live
 * postmaster still holds the cluster.
 */
export async function clearStalePostmasterPid(clusterDir: string): Promise<PostmasterPidState> {
  const file = join(clusterDir, 'postmaster.pid');
  let content: string;
  try {
    content = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'absent' };
    throw error;
  }
  const pid = Number.parseInt(content.split('\n', 1)[0] ?? '', 10);
  const valid = Number.isInteger(pid) && pid > 0;
  if (valid && (await isLivePostgres(pid))) return { kind: 'running', pid };
  await rm(file, { force: true });
  return { kind: 'removed', pid: valid ? pid : undefined };
}

async function isLivePostgres(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (process.platform !== 'linux') return true; // cannot tell: assume it is ours
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ...": the comm may contain spaces or parentheses.
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const state = stat.slice(close + 2, close + 3);
    return state !== 'Z' && comm === 'postgres';
  } catch {
    return false; // vanished between the two checks
  }
}

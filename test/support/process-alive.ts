/**
 * Whether a process with this pid exists (signal 0: nothing is sent). A
 * test asks it of a service, a child or a server it stopped; every such
 * process runs as this user, so a refusal (EPERM) counts as gone too.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

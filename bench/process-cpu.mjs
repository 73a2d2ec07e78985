// CPU time of the machine's processes from /proc, for saying where a
// benchmark phase's time went: each process's user + system time, by pid,
// and the difference of two snapshots grouped by a role the caller names
// (the events process, the subscriber generators, PostgreSQL...).
import { readFileSync, readdirSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** One process's CPU time so far (user + system), in ms; undefined once it is gone. */
export function cpuMsOf(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** Every process's CPU time so far and its command line: Map pid -> {ms, command}. */
export function cpuSnapshot() {
  const snapshot = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const ms = cpuMsOf(entry);
    if (ms === undefined) continue;
    let command = '';
    try {
      command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      continue;
    }
    snapshot.set(Number(entry), { ms, command });
  }
  return snapshot;
}

/**
 * The CPU ms each role used between two snapshots: `roleOf(pid, command)`
 * names a process's role (undefined: counted as 'other'); a process that
 * started in between counts from zero.
 */
export function cpuByRole(before, after, roleOf) {
  const used = {};
  for (const [pid, { ms, command }] of after) {
    const delta = ms - (before.get(pid)?.ms ?? 0);
    if (delta <= 0) continue;
    const role = roleOf(pid, command) ?? 'other';
    used[role] = (used[role] ?? 0) + delta;
  }
  return used;
}

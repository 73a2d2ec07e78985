import { execFileSync } from 'node:child_process';

/**
 * The uid and gid of Debian's `postgres` user when the tests run as root,
 * for the servers that refuse to run as root (PostgreSQL under Patroni,
 * PgBouncer); undefined otherwise (they then run as the current user).
 */
export function postgresUserIfRoot(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
  };
}

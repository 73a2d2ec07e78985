import { execFile } from 'node:child_process';
import { chmod, lstat, readdir, stat, lchown } from 'node:fs/promises';
import { dirname, join, parse, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The uid/gid Postgres runs as when this process is root. */
export interface OsIdentity {
  readonly uid: number;
  readonly gid: number;
}

const POSTGRES_USER = 'postgres';

/**
 * Postgres refuses to run as root. As root, returns the identity of the OS
 * user `postgres`, creating it (a system user without a home) when missing;
 * as anyone else, returns `undefined`: Postgres runs as the current user.
 */
export async function resolvePostgresIdentity(): Promise<OsIdentity | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const existing = await lookupUser(POSTGRES_USER);
  if (existing) return existing;
  // Another process may be creating the user at the same moment: ignore
  // "already exists" failures and trust the lookup that follows.
  await run('groupadd', ['--system', POSTGRES_USER]).catch(() => undefined);
  await run('useradd', [
    '--system',
    '--gid',
    POSTGRES_USER,
    '--no-create-home',
    '--shell',
    '/usr/sbin/nologin',
    POSTGRES_USER,
  ]).catch(() => undefined);
  const created = await lookupUser(POSTGRES_USER);
  if (!created) {
    throw new Error(
      `running as root, Postgres needs an OS user "${POSTGRES_USER}", and creating it failed ` +
        '(groupadd/useradd); create it by hand or run as an unprivileged user',
    );
  }
  return created;
}

async function lookupUser(name: string): Promise<OsIdentity | undefined> {
  try {
    const [uid, gid] = await Promise.all([
      run('id', ['-u', name]).then(({ stdout }) => Number.parseInt(stdout, 10)),
      run('id', ['-g', name]).then(({ stdout }) => Number.parseInt(stdout, 10)),
    ]);
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Makes every directory from the filesystem root down to `path` (inclusive)
 * searchable by `identity`, adding only the "others may traverse" bit
 * (`o+x`) where it is missing: nothing becomes listable or readable.
 * Needed as root, where a repository or temp folder under a 0700 directory
 * (`/root`, `mkdtemp`) would otherwise hide the binaries or the data
 * directory from the `postgres` user. Reports each change through `onChange`.
 */
export async function ensureTraversable(
  path: string,
  identity: OsIdentity,
  onChange: (message: string) => void,
): Promise<void> {
  const chain: string[] = [];
  const { root } = parse(resolve(path));
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    chain.unshift(dir);
    if (dir === root) break;
  }
  for (const dir of chain) {
    const info = await stat(dir);
    if (canSearch(info.mode, info.uid, info.gid, identity)) continue;
    await chmod(dir, (info.mode & 0o7777) | 0o001);
    onChange(`made ${dir} traversable (o+x) for the postgres user`);
  }
}

function canSearch(mode: number, uid: number, gid: number, identity: OsIdentity): boolean {
  if (uid === identity.uid) return (mode & 0o100) !== 0;
  if (gid === identity.gid) return (mode & 0o010) !== 0;
  return (mode & 0o001) !== 0;
}

/**
 * Gives `path` and everything under it to `identity` (symlinks themselves,
 * never their targets). Used when an existing cluster was created by another
 * user, which Postgres rejects ("data directory has wrong ownership").
 */
export async function chownTree(path: string, identity: OsIdentity): Promise<void> {
  const info = await lstat(path);
  await lchown(path, identity.uid, identity.gid);
  if (!info.isDirectory()) return;
  for (const entry of await readdir(path)) {
    await chownTree(join(path, entry), identity);
  }
}

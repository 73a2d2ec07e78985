import { randomBytes } from 'node:crypto';
import { chmod, chown, readFile, stat, writeFile } from 'node:fs/promises';
import type { OsIdentity } from './os-identity.js';

/**
 * Returns the superuser password kept in `file`, creating it on first use:
 * 32 random characters, mode 0600, owned by the Postgres OS user (initdb
 * reads it with `--pwfile`; root can read it regardless). Reusing the file is
 * what lets a persistent cluster be restarted by a later process.
 */
export async function readOrCreatePassword(
  file: string,
  identity: OsIdentity | undefined,
): Promise<string> {
  const fresh = randomBytes(24).toString('base64url');
  try {
    await writeFile(file, `${fresh}\n`, { flag: 'wx', mode: 0o600 });
    if (identity) await chown(file, identity.uid, identity.gid);
    return fresh;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const info = await stat(file);
  if ((info.mode & 0o077) !== 0) await chmod(file, 0o600);
  const existing = (await readFile(file, 'utf8')).trim();
  if (existing.length === 0) throw new Error(`the Postgres password file ${file} is empty`);
  return existing;
}

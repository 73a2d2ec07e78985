import { chmod, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readOrCreatePassword } from './cluster-password.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'docket-password-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('readOrCreatePassword', () => {
  it('creates a random 32-character password readable only by its owner, then reuses it', async () => {
    const file = join(dir, 'password');
    const created = await readOrCreatePassword(file, undefined);
    expect(created).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readOrCreatePassword(file, undefined)).toBe(created);
    expect(await readOrCreatePassword(join(dir, 'other'), undefined)).not.toBe(created);
  });

  it('agrees on one password when called concurrently', async () => {
    const file = join(dir, 'password');
    const passwords = await Promise.all(
      Array.from({ length: 8 }, () => readOrCreatePassword(file, undefined)),
    );
    expect(new Set(passwords).size).toBe(1);
  });

  it('tightens a password file that others can read', async () => {
    const file = join(dir, 'password');
    await writeFile(file, 'secret\n');
    await chmod(file, 0o644);
    expect(await readOrCreatePassword(file, undefined)).toBe('secret');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('rejects an empty password file', async () => {
    const file = join(dir, 'password');
    await writeFile(file, '\n');
    await expect(readOrCreatePassword(file, undefined)).rejects.toThrow(/empty/);
  });
});

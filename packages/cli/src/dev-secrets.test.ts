import { chmod, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { devSecretsPath, loadOrCreateDevSecrets, readDevSecrets } from './dev-secrets.js';

let dataDir: string;
beforeEach(async () => {
  dataDir = join(await mkdtemp(join(tmpdir(), 'docket-secrets-')), 'nested');
});
afterEach(async () => {
  await rm(join(dataDir, '..'), { recursive: true, force: true });
});

describe('loadOrCreateDevSecrets', () => {
  it('creates two distinct random secrets in a 0600 file, then keeps them', async () => {
    expect(await readDevSecrets(dataDir)).toBeUndefined();
    const created = await loadOrCreateDevSecrets(dataDir);
    expect(created.authSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(created.cursorSecret).not.toBe(created.authSecret);
    expect((await stat(devSecretsPath(dataDir))).mode & 0o777).toBe(0o600);
    expect(await loadOrCreateDevSecrets(dataDir)).toEqual(created);
    expect(await readDevSecrets(dataDir)).toEqual(created);
  });

  it('agrees on one set of secrets when called concurrently', async () => {
    const all = await Promise.all(Array.from({ length: 6 }, () => loadOrCreateDevSecrets(dataDir)));
    expect(new Set(all.map((secrets) => secrets.authSecret)).size).toBe(1);
  });

  it('tightens a file others can read and rejects a malformed one', async () => {
    await loadOrCreateDevSecrets(dataDir);
    await chmod(devSecretsPath(dataDir), 0o644);
    await readDevSecrets(dataDir);
    expect((await stat(devSecretsPath(dataDir))).mode & 0o777).toBe(0o600);

    await writeFile(devSecretsPath(dataDir), '{"authSecret": "short"}');
    await expect(readDevSecrets(dataDir)).rejects.toThrow(/secrets\.json is not valid/);
    await writeFile(devSecretsPath(dataDir), 'not json');
    await expect(loadOrCreateDevSecrets(dataDir)).rejects.toThrow(/secrets\.json is not valid/);
  });
});

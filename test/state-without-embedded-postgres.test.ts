import { randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitForServing } from '@docket/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, startService, stopAll } from './support/cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { runShell } from './support/shell.js';

/**
 * The built state service in a layout like the production image's, where
 * `@docket/embedded-postgres` and the `embedded-postgres` packages are not
 * installed (deploy/Dockerfile removes them): a copy of services/state
 * (with links to its own nested packages) beside a node_modules of links to
 * every other installed package. The repository's own node_modules, shared
 * with the other tests, is only read.
 */

const LEFT_OUT = new Set(['embedded-postgres', '@embedded-postgres', '@docket/embedded-postgres']);
const SECRET = randomBytes(32).toString('base64url');
let layout: string;
let entry: string;

/** Links `<layout>/node_modules/<name>` to the repository's for every package not in {@link LEFT_OUT}. */
async function linkPackages(from: string, to: string, scope = ''): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const name of await readdir(from)) {
    const full = scope ? `${scope}/${name}` : name;
    if (LEFT_OUT.has(full) || name === '.bin' || name.startsWith('.package-lock')) continue;
    if (!scope && name.startsWith('@')) await linkPackages(join(from, name), join(to, name), name);
    else await symlink(join(from, name), join(to, name));
  }
}

beforeAll(async () => {
  layout = await mkdtemp(join(tmpdir(), 'docket-state-image-'));
  await linkPackages(join(REPO_ROOT, 'node_modules'), join(layout, 'node_modules'));
  await cp(join(REPO_ROOT, 'services/state/package.json'), join(layout, 'services/state/package.json'));
  // The image copies services/ whole, so the state service's own nested packages (cron-parser 5, where the
  // root holds the 4 the benchmark peers need) come with it.
  if (existsSync(join(REPO_ROOT, 'services/state/node_modules'))) {
    await linkPackages(join(REPO_ROOT, 'services/state/node_modules'), join(layout, 'services/state/node_modules'));
  }
  await cp(join(REPO_ROOT, 'services/state/dist'), join(layout, 'services/state/dist'), { recursive: true });
  entry = join(layout, 'services/state/dist/main.js');
});

afterAll(async () => {
  await stopAll();
  await rm(layout, { recursive: true, force: true });
});

describe('the state service without the embedded PostgreSQL package', () => {
  it('really cannot resolve @docket/embedded-postgres there', async () => {
    expect(existsSync(join(layout, 'node_modules/@docket/embedded-postgres'))).toBe(false);
    expect(existsSync(join(layout, 'node_modules/@docket/service-kit'))).toBe(true);
    const probe = await runShell(`exec "${process.execPath}" --input-type=module -e "await import('@docket/embedded-postgres')"`, {
      cwd: join(layout, 'services/state/dist'),
      env: { PATH: process.env['PATH'] ?? '' },
    });
    expect(probe.code).toBe(1);
    expect(probe.stderr).toContain('ERR_MODULE_NOT_FOUND');
  });

  it('starts and drains with DOCKET_DATABASE_URL set', async () => {
    const url = await createMigratedTestDatabase('state-without-embedded-postgres');
    const state = await startService('state', { DOCKET_SERVICE_AUTH_SECRET: SECRET, DOCKET_DATABASE_URL: url }, { entry });
    expect(state.logs.map((line) => JSON.parse(line) as Record<string, unknown>)).toContainEqual(expect.objectContaining({ msg: 'schema ready' }));
    await waitForServing(state.url);
    expect(await state.stop()).toBe(0);
  });

  it('without it, exits 1 with one line saying DOCKET_DATABASE_URL is required, and no stack', async () => {
    const result = await runShell(`exec "${process.execPath}" "${entry}"`, {
      cwd: layout,
      env: { PATH: process.env['PATH'] ?? '', DOCKET_SERVICE_AUTH_SECRET: SECRET, DOCKET_LISTEN: '127.0.0.1:0', DOCKET_DATA_DIR: join(layout, 'data') },
      timeoutMs: 30_000,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('');
    const lines = result.stdout.split('\n').filter((line) => line !== '');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual(
      expect.objectContaining({ level: 'error', msg: 'failed to start', error: 'Error', reason: expect.stringMatching(/^DOCKET_DATABASE_URL is required: [^/]*$/) }),
    );
    expect(existsSync(join(layout, 'data'))).toBe(false);
  });
});

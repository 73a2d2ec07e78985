import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/service-process.js';

/**
 * The scripts that run a benchmark when imported (`npm run bench` and the
 * profilers); every other module in these folders only defines things.
 * bench/generators/ holds forked children that start on import (what they
 * import is here).
 */
const ENTRY_POINTS = new Set(['run.mjs', 'profile.mjs', 'profile-calls.mjs', 'profile-replay.mjs', 'mutation-ab.mjs', 'replay-ab.mjs']);
const MODULE_DIRS = ['bench', 'bench/docket', 'bench/peers', 'bench/report', 'bench/load'];

describe('the benchmark modules', () => {
  it('load in Node against the built workspace: every import they name exists', async () => {
    // vitest's transform turns a missing named import into `undefined`; Node's own loader refuses it, as `npm run bench` would.
    const modules: string[] = [];
    for (const dir of MODULE_DIRS) {
      for (const name of await readdir(join(REPO_ROOT, dir))) {
        if (name.endsWith('.mjs') && !(dir === 'bench' && ENTRY_POINTS.has(name))) modules.push(pathToFileURL(join(REPO_ROOT, dir, name)).href);
      }
    }
    const script = `for (const url of ${JSON.stringify(modules)}) await import(url); console.log('loaded', ${modules.length});`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: REPO_ROOT, timeout: 30_000 });
    expect(modules.length).toBeGreaterThan(30);
    expect(stdout.trim()).toBe(`loaded ${modules.length}`);
  });
});

import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clearStalePostmasterPid } from './stale-postmaster-pid.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'docket-pidfile-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const pidFile = (): string => join(dir, 'postmaster.pid');
const exists = (path: string): Promise<boolean> => stat(path).then(() => true, () => false);

/** A pid that certainly belonged to a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn('true', { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid ?? 0;
}

describe('clearStalePostmasterPid', () => {
  it('reports absent when there is no pid file', async () => {
    expect(await clearStalePostmasterPid(dir)).toEqual({ kind: 'absent' });
  });

  it('removes the file when the recorded pid is dead', async () => {
    const pid = await deadPid();
    await writeFile(pidFile(), `${pid}\n${dir}\n1700000000\n5432\n`);
    expect(await clearStalePostmasterPid(dir)).toEqual({ kind: 'removed', pid });
    expect(await exists(pidFile())).toBe(false);
  });

  it.runIf(process.platform === 'linux')(
    'removes the file when the pid was reused by a process that is not postgres',
    async () => {
      const impostor = spawn('sleep', ['30'], { stdio: 'ignore' });
      try {
        await writeFile(pidFile(), `${impostor.pid}\n${dir}\n`);
        expect(await clearStalePostmasterPid(dir)).toEqual({ kind: 'removed', pid: impostor.pid });
      } finally {
        impostor.kill('SIGKILL');
      }
    },
  );

  it('removes a file that names no pid at all', async () => {
    await writeFile(pidFile(), 'garbage\n');
    expect(await clearStalePostmasterPid(dir)).toEqual({ kind: 'removed', pid: undefined });
  });
});

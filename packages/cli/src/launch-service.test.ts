import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { launchService, parseListeningUrl } from './launch-service.js';
import { isProcessAlive } from '../../../test/support/process-alive.js';

const FAKE_SERVICE = fileURLToPath(new URL('../../../test/support/fixtures/fake-service.mjs', import.meta.url));
const VITE_NODE = fileURLToPath(new URL('../../../node_modules/.bin/vite-node', import.meta.url));
const LAUNCH_SERVICE = fileURLToPath(new URL('./launch-service.ts', import.meta.url));

describe('parseListeningUrl', () => {
  it('reads the url of the listening line only', () => {
    expect(parseListeningUrl('{"level":"info","msg":"listening","url":"http://127.0.0.1:7401"}')).toBe(
      'http://127.0.0.1:7401',
    );
    expect(parseListeningUrl('{"msg":"listening"}')).toBeUndefined();
    expect(parseListeningUrl('{"msg":"started","url":"http://x"}')).toBeUndefined();
    expect(parseListeningUrl('listening on http://127.0.0.1:1')).toBeUndefined();
    expect(parseListeningUrl('{"msg":"listening","url":')).toBeUndefined();
  });
});

describe('launchService', () => {
  it('labels lines by stream and starts a detached child in its own process group', async () => {
    const lines: string[] = [];
    const service = launchService({
      name: 'fake',
      entry: FAKE_SERVICE,
      env: { PATH: process.env['PATH'] ?? '', DOCKET_LISTEN: '127.0.0.1:0' },
      onLine: (line, stream) => lines.push(`${stream}: ${line}`),
      detached: true,
    });
    const url = await service.ready;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // stderr is its own pipe: its line may arrive after the listening line on stdout.
    await expect.poll(() => lines, { timeout: 5_000 }).toContain('stderr: fake-service: a line on stderr');
    // Detached: the child leads its own process group, so signalling the group reaches it.
    process.kill(-(service.child.pid ?? 0), 'SIGTERM');
    expect(await service.exited).toEqual({ code: 0, signal: null });
    expect(service.recentLines().at(-1)).toContain('"msg":"stopped"');
  });

  it('kills the services of a process that exits without stopping them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'docket-launch-'));
    try {
      const script = join(dir, 'abandon.ts');
      await writeFile(
        script,
        [
          `import { launchService } from ${JSON.stringify(LAUNCH_SERVICE)};`,
          `const service = launchService({ name: 'orphan', entry: ${JSON.stringify(FAKE_SERVICE)}, env: { PATH: process.env.PATH ?? '' } });`,
          'await service.ready;',
          'console.log(`pid=${service.child.pid}`);',
          'process.exit(1);',
        ].join('\n'),
      );
      const parent = spawn(VITE_NODE, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
      let output = '';
      parent.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await new Promise((resolve) => parent.once('exit', resolve));
      const pid = Number(/pid=(\d+)/.exec(output)?.[1]);
      expect(pid).toBeGreaterThan(0);
      await expect.poll(() => isProcessAlive(pid), { timeout: 5_000 }).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

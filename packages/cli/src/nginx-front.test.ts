import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layOutFront, locateNginx, NginxMissingError, startNginxFront, type NginxFront } from './nginx-front.js';

let dir: string;
let executable: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'docket-locate-nginx-'));
  executable = join(dir, 'nginx');
  await writeFile(executable, '#!/bin/sh\n');
  await chmod(executable, 0o755);
  await writeFile(join(dir, 'not-executable'), '');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('locateNginx', () => {
  it('takes DOCKET_NGINX, else nginx on PATH, else the fallback directories', async () => {
    expect(await locateNginx({ DOCKET_NGINX: executable, PATH: '' }, [])).toBe(executable);
    expect(await locateNginx({ PATH: `/nonexistent:${dir}` }, [])).toBe(executable);
    expect(await locateNginx({ PATH: '' }, ['/nonexistent', dir])).toBe(executable);
  });

  it("names Debian's package when there is none", async () => {
    const missing = locateNginx({ PATH: '/nonexistent' }, []);
    await expect(missing).rejects.toBeInstanceOf(NginxMissingError);
    await expect(missing).rejects.toThrow(/not installed.*sudo apt-get install nginx/);
    await expect(locateNginx({ DOCKET_NGINX: join(dir, 'not-executable') }, [dir])).rejects.toThrow(/DOCKET_NGINX .*not an executable file.*sudo apt-get install nginx/);
  });
});

describe('layOutFront', () => {
  it('puts every replica and HTTP/1.1 listener on a port of its own, and keeps the ports it is given', async () => {
    const layout = await layOutFront({
      host: '127.0.0.1',
      counts: { admission: 3, execution: 3, events: 2, state: 2 },
      ports: { admission: 7401, execution: 0, events: 7403, state: 7404 },
    });
    expect(layout.replicas.admission).toHaveLength(3);
    expect(layout.replicas.state).toHaveLength(2);
    const byName = Object.fromEntries(layout.services.map((service) => [service.name, service]));
    expect(byName['admission']).toMatchObject({ listen: '127.0.0.1:7401', replicas: layout.replicas.admission });
    expect(byName['execution']?.listen).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(byName['execution']?.listen).not.toBe('127.0.0.1:0');
    expect(Object.keys(byName).filter((name) => byName[name]?.http1Listen !== undefined).sort()).toEqual(['admission', 'events']);
    const addresses = layout.services.flatMap((service) => [service.listen, ...(service.http1Listen ? [service.http1Listen] : []), ...service.replicas]);
    expect(new Set(addresses).size).toBe(addresses.length);
  });
});

describe('startNginxFront', () => {
  it('stops an nginx an earlier run left on the same configuration, and takes over its ports', async () => {
    const frontDir = join(dir, 'front');
    const layout = await layOutFront({ host: '127.0.0.1', counts: { admission: 1, execution: 1, events: 1, state: 2 }, ports: { admission: 0, execution: 0, events: 0, state: 0 } });
    const options = { nginx: await locateNginx(process.env), dir: frontDir, accessLog: join(dir, 'access.log'), services: layout.services };
    const leftBehind = await startNginxFront(options);
    const notices: string[] = [];
    let next: NginxFront | undefined;
    try {
      next = await startNginxFront({ ...options, onLine: (line) => notices.push(line) });
      // The first nginx was stopped by the second start, not by its parent: SIGTERM, which nginx answers by exiting 0.
      expect(await leftBehind.exited).toEqual({ code: 0, signal: null });
      expect(notices).toEqual([`[docket] stopped nginx ${leftBehind.pid}, left running on ${next.configFile} by an earlier run that was killed`]);
      expect(next.pid).not.toBe(leftBehind.pid);
      expect(next.urls).toEqual(leftBehind.urls);
    } finally {
      await leftBehind.stop();
      await next?.stop();
    }
  });

  it('refuses a port another process holds, before starting nginx', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      const layout = await layOutFront({ host: '127.0.0.1', counts: { admission: 1, execution: 1, events: 1, state: 1 }, ports: { admission: 0, execution: 0, events: 0, state: port } });
      const started = startNginxFront({ nginx: await locateNginx(process.env), dir: join(dir, 'busy'), accessLog: join(dir, 'busy.log'), services: layout.services });
      await expect(started).rejects.toThrow(`127.0.0.1:${port} is in use`);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });
});

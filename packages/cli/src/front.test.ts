import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect as connectHttp2 } from 'node:http2';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layOutFront, startFront, type Front } from './front.js';
import { FrontProgramMissingError, locateFrontPrograms } from './front-programs.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'docket-front-'));
  for (const program of ['nginx', 'haproxy']) {
    await writeFile(join(dir, program), '#!/bin/sh\n');
    await chmod(join(dir, program), 0o755);
  }
  await writeFile(join(dir, 'not-executable'), '');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('locateFrontPrograms', () => {
  it('takes DOCKET_NGINX and DOCKET_HAPROXY, else the programs on PATH, else in the fallback directories', async () => {
    const found = { nginx: join(dir, 'nginx'), haproxy: join(dir, 'haproxy') };
    expect(await locateFrontPrograms({ DOCKET_NGINX: found.nginx, DOCKET_HAPROXY: found.haproxy, PATH: '' }, [])).toEqual(found);
    expect(await locateFrontPrograms({ PATH: `/nonexistent:${dir}` }, [])).toEqual(found);
    expect(await locateFrontPrograms({ PATH: '' }, ['/nonexistent', dir])).toEqual(found);
  });

  it("names Debian's package of the one missing", async () => {
    const missing = locateFrontPrograms({ PATH: '/nonexistent' }, []);
    await expect(missing).rejects.toBeInstanceOf(FrontProgramMissingError);
    await expect(missing).rejects.toThrow(/nginx is not installed.*sudo apt-get install nginx/);
    await expect(locateFrontPrograms({ DOCKET_NGINX: join(dir, 'nginx'), PATH: '/nonexistent' }, [])).rejects.toThrow(/haproxy is not installed.*sudo apt-get install haproxy/);
    await expect(locateFrontPrograms({ DOCKET_HAPROXY: join(dir, 'not-executable') }, [dir])).rejects.toThrow(/DOCKET_HAPROXY .*not an executable file.*sudo apt-get install haproxy/);
  });
});

describe('layOutFront', () => {
  it("puts every replica and nginx's two listeners per service on ports of their own, and keeps the ports it is given", async () => {
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
    const addresses = layout.services.flatMap((service) => [service.listen, service.http2Listen, service.http1Listen, ...service.replicas]);
    expect(new Set(addresses).size).toBe(addresses.length);
  });
});

describe('startFront', () => {
  it("passes HTTP/1.1 and HTTP/2 on a service's one port to nginx's listener of each protocol", async () => {
    // No replica listens: nginx answers 502 itself, over the protocol it was reached by, and logs the request with it.
    const layout = await layOutFront({ host: '127.0.0.1', counts: { admission: 1, execution: 1, events: 1, state: 1 }, ports: { admission: 0, execution: 0, events: 0, state: 0 } });
    const accessLog = join(dir, 'protocols.log');
    const front = await startFront({ programs: await locateFrontPrograms(process.env), dir: join(dir, 'protocols'), accessLog, services: layout.services });
    try {
      const url = front.urls.execution!;
      const overHttp1 = await fetch(`${url}/over-http1`, { method: 'POST', body: '{}' });
      expect(overHttp1.status).toBe(502);
      expect(overHttp1.headers.get('server')).toMatch(/^nginx/);
      const session = connectHttp2(url);
      try {
        const status = await new Promise<number | undefined>((resolve, reject) => {
          const stream = session.request({ ':method': 'POST', ':path': '/over-http2', 'content-type': 'application/grpc', te: 'trailers' });
          stream.on('response', (headers) => resolve(headers[':status']));
          stream.on('error', reject);
          stream.end();
        });
        expect(status).toBe(502);
      } finally {
        session.close();
      }
      const requests = (await readFile(accessLog, 'utf8')).split('\n').filter((line) => line.includes('/over-http'));
      expect(requests.map((line) => /"(POST \S+ HTTP\/[\d.]+)"/.exec(line)?.[1])).toEqual(['POST /over-http1 HTTP/1.1', 'POST /over-http2 HTTP/2.0']);
    } finally {
      await front.stop();
    }
  });

  it('stops an nginx and a port switch an earlier run left on the same configurations, and takes over their ports', async () => {
    const frontDir = join(dir, 'front');
    const layout = await layOutFront({ host: '127.0.0.1', counts: { admission: 1, execution: 1, events: 1, state: 2 }, ports: { admission: 0, execution: 0, events: 0, state: 0 } });
    const options = { programs: await locateFrontPrograms(process.env), dir: frontDir, accessLog: join(dir, 'access.log'), services: layout.services };
    const leftBehind = await startFront(options);
    const notices: string[] = [];
    let next: Front | undefined;
    try {
      next = await startFront({ ...options, onLine: (line) => notices.push(line) });
      // Both were stopped by the second start, not by their parent: SIGTERM.
      expect(await leftBehind.exited).toMatchObject({ signal: null });
      expect(notices).toEqual([
        `[docket] stopped nginx ${leftBehind.pids.nginx}, left running on ${next.configFile} by an earlier run that was killed`,
        `[docket] stopped haproxy ${leftBehind.pids.haproxy}, left running on ${next.switchConfigFile} by an earlier run that was killed`,
      ]);
      expect(next.pids.nginx).not.toBe(leftBehind.pids.nginx);
      expect(next.urls).toEqual(leftBehind.urls);
    } finally {
      await leftBehind.stop();
      await next?.stop();
    }
  });

  it('refuses a port another process holds, before starting anything', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      const layout = await layOutFront({ host: '127.0.0.1', counts: { admission: 1, execution: 1, events: 1, state: 1 }, ports: { admission: 0, execution: 0, events: 0, state: port } });
      const started = startFront({ programs: await locateFrontPrograms(process.env), dir: join(dir, 'busy'), accessLog: join(dir, 'busy.log'), services: layout.services });
      await expect(started).rejects.toThrow(`127.0.0.1:${port} is in use`);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });
});

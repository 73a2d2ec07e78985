import * as net from 'node:net';
import { Code, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { mintToken, type Role } from '@docket/auth';
import { afterEach, describe, expect, it } from 'vitest';
import { readFrontServiceConfig } from './front-service-config.js';
import { startFrontServer, stateTransportOf, type FrontServerOptions } from './front-server.js';
import { createLogger } from './logger.js';
import type { RunningServer } from './server.js';
import { ProbeService } from './testing/probe-service.js';
import { probeImplementation } from './testing/probe-server.js';

const AUTH_SECRET = 'public-secret-0123456789-abcdefghijklm';
const SERVICE_SECRET = 'service-secret-0123456789-nopqrstuvwxyz';

/** A front service's settings on a free port; its state service (port 9 on loopback) never answers. */
function frontConfig(listen = '127.0.0.1:0') {
  return readFrontServiceConfig(
    { DOCKET_AUTH_SECRET: AUTH_SECRET, DOCKET_SERVICE_AUTH_SECRET: SERVICE_SECRET, DOCKET_LISTEN: listen, DOCKET_STATE_URL: 'http://127.0.0.1:9' },
    0,
  );
}

const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.shutdown(100)));
});

async function startProbe(options: Partial<FrontServerOptions> = {}, listen?: string): Promise<RunningServer> {
  const config = frontConfig(listen);
  const server = await startFrontServer(config, {
    name: 'admission',
    services: [ProbeService],
    routes: (router) => router.service(ProbeService, probeImplementation),
    allowedRoles: ['user'],
    stateTransport: stateTransportOf(config, 'admission'),
    logger: createLogger('admission', () => {}, 'error'),
    ...options,
  });
  servers.push(server);
  return server;
}

async function echoAs(server: RunningServer, role: Role): Promise<string> {
  const token = await mintToken({ secret: AUTH_SECRET, subject: 'alice', role, ttlSeconds: 60 });
  const client = createClient(ProbeService, createGrpcTransport({ baseUrl: server.url }));
  const reply = await client.echo({ text: 'who' }, { headers: { authorization: `Bearer ${token}` } });
  return reply.text;
}

describe('startFrontServer', () => {
  it('lets in the public tokens of the allowed roles only', async () => {
    const server = await startProbe();
    expect(await echoAs(server, 'user')).toBe('alice/user');
    await expect(echoAs(server, 'worker')).rejects.toMatchObject({ code: Code.PermissionDenied });
  });

  it('shuts down once: stopFirst begins before the drain and ends before close', async () => {
    const steps: string[] = [];
    const server = await startProbe({
      stopFirst: async () => {
        steps.push('stopping');
        await new Promise((resolve) => setTimeout(resolve, 20));
        steps.push('stopped');
      },
      close: async () => {
        steps.push('closed');
      },
    });
    const first = server.shutdown(100);
    expect(steps).toEqual(['stopping']);
    expect(server.shutdown(100)).toBe(first);
    await first;
    expect(steps).toEqual(['stopping', 'stopped', 'closed']);
  });

  it('closes what it was given when it cannot listen', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as net.AddressInfo;
    let closed = 0;
    try {
      const refusal = await startProbe({ close: async () => void closed++ }, `127.0.0.1:${port}`).catch((error: unknown) => error);
      expect((refusal as NodeJS.ErrnoException).code).toBe('EADDRINUSE');
      expect(closed).toBe(1);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

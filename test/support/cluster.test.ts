import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SERVICE_AUDIENCE, verifyBearer } from '@docket/auth';
import { waitForServing } from '@docket/cli';
import { startCluster, stopAll, type ServiceProcess } from './cluster.js';
import { isProcessAlive } from './process-alive.js';

const FAKE_SERVICE = fileURLToPath(new URL('./fixtures/fake-service.mjs', import.meta.url));

afterAll(stopAll);

interface FakeConfiguration {
  readonly envKeys: string[];
  readonly stateUrl?: string;
  readonly databaseUrl?: string;
  readonly serviceAuthSecret?: string;
}

function configuration(service: ServiceProcess): FakeConfiguration {
  const line = service.logs.find((entry) => entry.includes('"msg":"configured"')) ?? '{}';
  return JSON.parse(line) as FakeConfiguration;
}

describe('startCluster', () => {
  it('starts state first and wires the other services to it with the service secret, which differs from the public one', async () => {
    const cluster = await startCluster({
      databaseUrl: 'postgres://example/db',
      entryFor: () => FAKE_SERVICE,
      env: { execution: { DOCKET_EXTRA: 'x' } },
    });
    const state = configuration(cluster.state);
    expect(state.databaseUrl).toBe('postgres://example/db');
    expect(state.envKeys).not.toContain('DOCKET_STATE_URL');
    expect(state.envKeys).not.toContain('DOCKET_AUTH_SECRET');
    expect(state.serviceAuthSecret).toBe(cluster.serviceAuthSecret);

    for (const service of [cluster.admission, cluster.execution, cluster.events]) {
      const front = configuration(service);
      expect(front.stateUrl).toBe(cluster.state.url);
      expect(front.envKeys).not.toContain('DOCKET_DATABASE_URL');
      expect(front.envKeys).toEqual(expect.arrayContaining(['DOCKET_AUTH_SECRET', 'DOCKET_CURSOR_SECRET']));
      expect(front.serviceAuthSecret).toBe(cluster.serviceAuthSecret);
    }
    expect(cluster.serviceAuthSecret).not.toBe(cluster.secret);
    expect(configuration(cluster.execution).envKeys).toContain('DOCKET_EXTRA');
    expect(await verifyBearer(`Bearer ${cluster.serviceToken}`, cluster.serviceAuthSecret, { audience: SERVICE_AUDIENCE })).toMatchObject({
      ok: true,
      principal: { role: 'service' },
    });
    expect(await verifyBearer(`Bearer ${cluster.serviceToken}`, cluster.secret)).toEqual({ ok: false, refusal: 'invalid' });
    expect(await verifyBearer(`Bearer ${await cluster.tokenFor('alice', 'user')}`, cluster.secret)).toMatchObject({
      ok: true,
      principal: { subject: 'alice', role: 'user' },
    });

    const urls = new Set([cluster.state, cluster.admission, cluster.execution, cluster.events].map((s) => s.url));
    expect(urls.size).toBe(4);
    await cluster.stop();
    for (const service of [cluster.state, cluster.admission, cluster.execution, cluster.events]) {
      expect(await service.exited).toEqual({ code: 0, signal: null });
    }
  });

  it('starts replicas, spreading front services over the state replicas', async () => {
    const cluster = await startCluster({
      databaseUrl: 'postgres://example/db',
      entryFor: () => FAKE_SERVICE,
      replicas: { state: 2, execution: 3 },
    });
    expect(cluster.replicas.state).toHaveLength(2);
    expect(cluster.replicas.admission).toHaveLength(1);
    expect(cluster.replicas.execution.map((service) => configuration(service).stateUrl)).toEqual([
      cluster.replicas.state[0]?.url,
      cluster.replicas.state[1]?.url,
      cluster.replicas.state[0]?.url,
    ]);
    await cluster.stop();
  });

  it('with the nginx front, names the front’s addresses, wires the front services to state through nginx, and stops it last', async () => {
    const cluster = await startCluster({
      databaseUrl: 'postgres://example/db',
      entryFor: () => FAKE_SERVICE,
      replicas: { state: 2, admission: 2 },
      front: 'nginx',
    });
    const front = cluster.front!;
    expect(cluster.state.url).toBe(front.urls.state);
    expect(cluster.admission.url).toBe(front.urls.admission);
    expect(cluster.replicas.admission.map((service) => service.url)).not.toContain(front.urls.admission);
    for (const service of [...cluster.replicas.admission, ...cluster.replicas.execution, ...cluster.replicas.events]) {
      expect(configuration(service).stateUrl).toBe(front.http2Urls.state);
    }
    for (const name of ['state', 'admission', 'execution', 'events'] as const) await waitForServing(cluster[name].url, { timeoutMs: 5_000 });
    await cluster.stop();
    // The switch first (HAProxy stops at once on SIGTERM, by the signal), then nginx.
    expect(await front.exited).toEqual({ program: 'haproxy', code: null, signal: 'SIGTERM' });
    expect(isProcessAlive(front.pids.nginx!)).toBe(false);
    for (const service of cluster.replicas.state) expect(await service.exited).toEqual({ code: 0, signal: null });
  });

  it('keeps its view current when a service is restarted', async () => {
    const cluster = await startCluster({ databaseUrl: 'postgres://example/db', entryFor: () => FAKE_SERVICE });
    const before = cluster.state;
    await before.kill();
    const after = await before.restart();
    expect(cluster.state).toBe(after);
    expect(after.url).toBe(before.url);
    await cluster.stop();
    expect(await after.exited).toEqual({ code: 0, signal: null });
  });

  it('stops what it started and reports the failing service when one cannot start', async () => {
    const attempt = startCluster({
      databaseUrl: 'postgres://example/db',
      entryFor: () => FAKE_SERVICE,
      env: { events: { FAKE_SERVICE_EXIT_BEFORE_READY: '4' } },
    });
    await expect(attempt).rejects.toThrow(/events exited before listening \(exit code 4\)/);
  });
});

import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CORS_ORIGINS, readCorsOrigins } from './cors.js';
import { readFrontServiceConfig } from './front-service-config.js';
import { startProbeServer, type ProbeHarness } from './testing/probe-server.js';

/*
 * CORS on a real server (the probe service through `startServer`): a
 * browser on an allowed origin gets its preflight answered and can read
 * the gRPC status of the answer; any other origin gets no CORS header, so
 * the browser refuses to show it the response.
 */

const CONSOLE = 'http://127.0.0.1:7405';
const ECHO = '/docket.testing.v1.ProbeService/Echo';

const harnesses: ProbeHarness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.server.shutdown(500)));
});

async function probe(origins?: readonly string[]): Promise<ProbeHarness> {
  const harness = await startProbeServer(origins === undefined ? {} : { corsOrigins: origins });
  harnesses.push(harness);
  return harness;
}

function preflight(url: string, origin: string): Promise<Response> {
  return fetch(`${url}${ECHO}`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization,content-type,x-grpc-web,x-user-agent,grpc-timeout',
    },
  });
}

describe('CORS', () => {
  it('answers the preflight of an allowed origin with what Connect-Web needs', async () => {
    const { url } = await probe([CONSOLE]);
    const response = await preflight(url, CONSOLE);
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe(CONSOLE);
    expect(response.headers.get('access-control-allow-methods')).toContain('POST');
    const allowed = response.headers.get('access-control-allow-headers') ?? '';
    for (const header of ['authorization', 'content-type', 'x-grpc-web', 'x-user-agent', 'grpc-timeout', 'connect-protocol-version']) {
      expect(allowed).toContain(header);
    }
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('lets an allowed origin read the gRPC status of a real call', async () => {
    const harness = await probe([CONSOLE]);
    const response = await fetch(`${harness.url}${ECHO}`, {
      method: 'POST',
      headers: { origin: CONSOLE, 'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1', authorization: `Bearer ${await harness.token()}` },
      body: new Uint8Array([0, 0, 0, 0, 0]),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe(CONSOLE);
    const exposed = response.headers.get('access-control-expose-headers') ?? '';
    for (const header of ['grpc-status', 'grpc-message', 'grpc-status-details-bin']) expect(exposed).toContain(header);
  });

  it('refuses the preflight of any other origin and adds no CORS header to its calls', async () => {
    const { url } = await probe([CONSOLE]);
    const refused = await preflight(url, 'http://evil.example');
    expect(refused.status).toBe(403);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    const call = await fetch(`${url}${ECHO}`, { method: 'POST', headers: { origin: 'http://evil.example', 'content-type': 'application/json' }, body: '{}' });
    expect(call.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('never answers a browser on the internal state service', async () => {
    const harness = await startProbeServer({ name: 'state' });
    harnesses.push(harness);
    const refused = await preflight(harness.url, CONSOLE);
    expect(refused.status).toBe(403);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('allows the console under npm start by default: a front service that sets no DOCKET_CORS_ORIGINS', async () => {
    const { corsOrigins } = readFrontServiceConfig(
      { DOCKET_AUTH_SECRET: randomBytes(32).toString('base64url'), DOCKET_SERVICE_AUTH_SECRET: randomBytes(32).toString('base64url') },
      7401,
    );
    const { url } = await probe(corsOrigins);
    expect((await preflight(url, 'http://localhost:7405')).headers.get('access-control-allow-origin')).toBe('http://localhost:7405');
    expect(DEFAULT_CORS_ORIGINS).toContain(CONSOLE);
  });

  it('allows no cross-origin caller when a server names no origins (the state service)', async () => {
    const { url } = await probe();
    expect((await preflight(url, CONSOLE)).headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('readCorsOrigins', () => {
  it('reads a list, none, or the default', () => {
    expect(readCorsOrigins({})).toEqual(DEFAULT_CORS_ORIGINS);
    expect(readCorsOrigins({ DOCKET_CORS_ORIGINS: 'none' })).toEqual([]);
    expect(readCorsOrigins({ DOCKET_CORS_ORIGINS: 'https://a.example, http://127.0.0.1:9000' })).toEqual(['https://a.example', 'http://127.0.0.1:9000']);
  });

  it('refuses what is not an origin', () => {
    for (const value of ['*', 'https://a.example/', 'https://a.example/console', 'a.example', 'ftp://a.example']) {
      expect(() => readCorsOrigins({ DOCKET_CORS_ORIGINS: value })).toThrow(/DOCKET_CORS_ORIGINS/);
    }
  });
});

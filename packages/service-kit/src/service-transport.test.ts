import { createServer as createHttp2Server, type ServerHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { mintToken } from '@docket/auth';
import { INTERNAL_RECEIVE_WINDOWS } from '@docket/client-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forwardDeadline } from './deadline.js';
import { errorInfoOf, fieldViolationsOf } from './error-mapping.js';
import { createServiceTransport } from './service-transport.js';
import { ProbeService } from './testing/probe-service.js';
import { PROBE_SECRET, PROBE_VIOLATIONS, startProbeServer, type ProbeHarness } from './testing/probe-server.js';

/*
 * Two hops, as admission -> state: a front probe server whose handlers call
 * an upstream probe server (which accepts only the `service` role) through
 * createServiceTransport.
 */
let upstream: ProbeHarness;
let front: ProbeHarness;
beforeAll(async () => {
  upstream = await startProbeServer({ authenticate: { secret: PROBE_SECRET, allowedRoles: ['service'] } });
  const serviceToken = await mintToken({ secret: PROBE_SECRET, subject: 'front', role: 'service', ttlSeconds: 600 });
  const next = createClient(ProbeService, createServiceTransport({ baseUrl: upstream.url, token: serviceToken }));
  front = await startProbeServer({
    routes: (router) =>
      router.service(ProbeService, {
        echo: (request, ctx) => next.echo({ text: request.text }, forwardDeadline(ctx)),
        async *count(request, ctx) {
          for await (const reply of next.count(request, forwardDeadline(ctx))) {
            yield reply;
            // Let a new async context start between messages.
            await new Promise((resolve) => setImmediate(resolve));
          }
        },
      }),
  });
});
afterAll(async () => {
  await front.server.shutdown(500);
  await upstream.server.shutdown(500);
});

async function userHeaders(extra: Record<string, string> = {}) {
  return { authorization: `Bearer ${await front.token('user')}`, ...extra };
}

describe('createServiceTransport', () => {
  it('authenticates with the service token', async () => {
    const probe = createClient(ProbeService, createGrpcTransport({ baseUrl: front.url }));
    expect((await probe.echo({ text: 'who' }, { headers: await userHeaders() })).text).toBe('front/service');
  });

  it('forwards x-request-id to the next hop, also from a streaming handler', async () => {
    const probe = createClient(ProbeService, createGrpcTransport({ baseUrl: front.url }));
    await probe.echo({ text: 'a' }, { headers: await userHeaders({ 'x-request-id': 'hop-unary' }) });
    for await (const _ of probe.count({ text: 'b', count: 2 }, { headers: await userHeaders({ 'x-request-id': 'hop-stream' }) })) {
      // drain
    }
    const ids = (h: ProbeHarness) => h.rpcLines().map((line) => line['request_id']);
    expect(ids(front)).toEqual(expect.arrayContaining(['hop-unary', 'hop-stream']));
    expect(ids(upstream)).toEqual(expect.arrayContaining(['hop-unary', 'hop-stream']));
  });

  it('passes the remaining deadline on', async () => {
    const probe = createClient(ProbeService, createGrpcTransport({ baseUrl: front.url }));
    const reply = await probe.echo({ text: 'deadline' }, { timeoutMs: 3_000, headers: await userHeaders() });
    expect(Number(reply.text)).toBeGreaterThan(2_000);
    expect(Number(reply.text)).toBeLessThanOrEqual(3_000);
  });

  it('propagates an upstream Docket error verbatim to gRPC and Connect callers', async () => {
    for (const transport of [
      createGrpcTransport({ baseUrl: front.url }),
      createConnectTransport({ baseUrl: front.url, httpVersion: '1.1' }),
      createConnectTransport({ baseUrl: front.url, httpVersion: '2' }),
    ]) {
      const probe = createClient(ProbeService, transport);
      const error = await probe.echo({ text: 'docket-error' }, { headers: await userHeaders() }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectError);
      const failure = error as ConnectError;
      expect(failure.code).toBe(Code.InvalidArgument);
      expect(failure.rawMessage).toBe('invalid request');
      expect(errorInfoOf(failure)).toMatchObject({ reason: 'INVALID_FIELD', domain: 'docket', metadata: { checked: 'queue,label' } });
      expect(fieldViolationsOf(failure)).toEqual(PROBE_VIOLATIONS);
    }
  });

  it('reports an unreachable next hop as UNAVAILABLE without leaking its address', async () => {
    const dead = await startProbeServer();
    await dead.server.shutdown(100);
    const token = await mintToken({ secret: PROBE_SECRET, subject: 'front', role: 'service', ttlSeconds: 600 });
    const next = createClient(ProbeService, createServiceTransport({ baseUrl: dead.url, token }));
    const lonely = await startProbeServer({
      routes: (router) =>
        router.service(ProbeService, { echo: (request, ctx) => next.echo(request, forwardDeadline(ctx)) }),
    });
    try {
      const probe = createClient(ProbeService, createGrpcTransport({ baseUrl: lonely.url }));
      const error = await probe.echo({ text: 'x' }, { headers: await userHeaders() }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConnectError);
      expect((error as ConnectError).code).toBe(Code.Unavailable);
      expect((error as ConnectError).rawMessage).toBe('unavailable');
      expect(errorInfoOf(error as ConnectError)?.reason).toBe('UNAVAILABLE');
    } finally {
      await lonely.server.shutdown(100);
    }
  });

  it('lets the next hop send up to 16 MiB on the session, not 64 KiB, before this side reads it', async () => {
    // A bare HTTP/2 server answering every call OK with an empty message: its session says what this side lets it send.
    const sessions: ServerHttp2Session[] = [];
    const bare = createHttp2Server();
    bare.on('session', (session) => sessions.push(session));
    bare.on('stream', (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(new Uint8Array(5));
    });
    await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = bare.address() as AddressInfo;
      const next = createClient(ProbeService, createServiceTransport({ baseUrl: `http://127.0.0.1:${port}`, token: 'unused' }));
      // The second call's request follows the first's window update on the wire.
      await next.echo({ text: 'first' });
      await next.echo({ text: 'second' });
      expect(sessions).toHaveLength(1);
      // What one stream may take is INTERNAL_RECEIVE_WINDOWS.streamBytes; the session now takes several streams' worth.
      expect(sessions[0]!.state.remoteWindowSize).toBeGreaterThan(INTERNAL_RECEIVE_WINDOWS.connectionBytes - 1024);
    } finally {
      for (const session of sessions) session.destroy();
      await new Promise((resolve) => bare.close(resolve));
    }
  });
});

import * as http from 'node:http';
import * as http2 from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';
import { Code, ConnectError, createClient, type ConnectRouter } from '@connectrpc/connect';
import { compressionGzip, createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { Health } from '@docket/proto/grpc/health/v1/health_pb.js';
import { afterEach, describe, expect, it } from 'vitest';
import { errorInfoOf } from './error-mapping.js';
import { startServer } from './server.js';
import { createLogger } from './logger.js';
import { grpcJsProbe } from './testing/grpc-js-probe.js';
import { rawGrpcStream } from './testing/raw-grpc-stream.js';
import { ProbeService } from './testing/probe-service.js';
import { probeImplementation, startProbeServer, type ProbeHarness } from './testing/probe-server.js';

const harnesses: ProbeHarness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.server.shutdown(500)));
});
async function probeServer(...args: Parameters<typeof startProbeServer>): Promise<ProbeHarness> {
  const harness = await startProbeServer(...args);
  harnesses.push(harness);
  return harness;
}

/**
 * The probe's routes, and a promise that resolves once an Echo call has
 * reached its handler: a test that shuts down "while a call is in flight"
 * waits for that instead of guessing how long the call takes to arrive.
 */
function arrivalProbe(): { routes: (router: ConnectRouter) => void; reached: Promise<void> } {
  let arrived!: () => void;
  const reached = new Promise<void>((resolve) => (arrived = resolve));
  const echo = probeImplementation.echo!;
  return {
    reached,
    routes: (router) =>
      router.service(ProbeService, {
        ...probeImplementation,
        echo: (request, ctx) => {
          arrived();
          return echo(request, ctx);
        },
      }),
  };
}

/** A plain HTTP/1.1 request, as curl would send it. */
function http1Post(url: string, path: string, body: string, headers: Record<string, string>) {
  return new Promise<{ status: number; httpVersion: string; body: string; encoding: string | undefined }>((resolve, reject) => {
    const request = http.request(new URL(path, url), { method: 'POST', headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, httpVersion: response.httpVersion, body: text, encoding: response.headers['content-encoding'] }),
      );
    });
    request.on('error', reject);
    request.end(body);
  });
}

describe('startServer', () => {
  it('logs {msg: "listening", url} with the port the OS chose', async () => {
    const harness = await probeServer();
    const listening = harness.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['msg'] === 'listening');
    expect(listening).toMatchObject({ level: 'info', service: 'probe', url: harness.url });
    expect(harness.url).toBe(`http://127.0.0.1:${harness.server.port}`);
    expect(harness.server.port).toBeGreaterThan(0);
  });

  it('answers Connect unary JSON over plain HTTP/1.1 on the same port', async () => {
    const harness = await probeServer();
    const token = await harness.token('admin', { subject: 'root' });
    const ok = await http1Post(harness.url, '/docket.testing.v1.ProbeService/Echo', '{"text":"who"}', {
      'content-type': 'application/json',
      authorization: `Bearer ${token}`,
    });
    expect(ok).toEqual({ status: 200, httpVersion: '1.1', body: '{"text":"root/admin"}', encoding: undefined });

    const refused = await http1Post(harness.url, '/docket.testing.v1.ProbeService/Echo', '{"text":"who"}', {
      'content-type': 'application/json',
    });
    expect(refused.status).toBe(401);
    const error = JSON.parse(refused.body) as { code: string; message: string; details: { type: string }[] };
    expect(error.code).toBe('unauthenticated');
    expect(error.message).toBe('unauthenticated');
    expect(error.details.map((d) => d.type)).toEqual(['google.rpc.ErrorInfo']);
  });

  it('answers uncompressed even to a client that accepts gzip, and still takes a gzipped request', async () => {
    const harness = await probeServer();
    const token = await harness.token('admin', { subject: 'root' });
    const text = 'docket '.repeat(300);
    const answer = await http1Post(harness.url, '/docket.testing.v1.ProbeService/Echo', JSON.stringify({ text }), {
      'content-type': 'application/json',
      'accept-encoding': 'gzip, br',
      authorization: `Bearer ${token}`,
    });
    expect(answer.status).toBe(200);
    expect(answer.encoding).toBeUndefined();
    expect((JSON.parse(answer.body) as { text: string }).text).toBe(text);
    const gzipped = createClient(ProbeService, createConnectTransport({ baseUrl: harness.url, httpVersion: '2', sendCompression: compressionGzip, compressMinBytes: 1 }));
    const echoed = await gzipped.echo({ text }, { headers: { authorization: `Bearer ${token}` } });
    expect(echoed.text).toBe(text);
  });

  it('logs every RPC exactly once, with code, reason, latency and request id, and nothing secret', async () => {
    const harness = await probeServer();
    const token = await harness.token();
    const probe = createClient(ProbeService, createGrpcTransport({ baseUrl: harness.url }));
    await probe.echo({ text: 'hello' }, { headers: { authorization: `Bearer ${token}`, 'x-request-id': 'req-1' } });
    await probe.echo({ text: 'docket-error' }, { headers: { authorization: `Bearer ${token}` } }).catch(() => {});
    const streamed = [];
    for await (const reply of probe.count({ text: 'n', count: 3 }, { headers: { authorization: `Bearer ${token}` } })) {
      streamed.push(reply.sequence);
    }
    expect(streamed).toEqual([1, 2, 3]);
    await createClient(Health, createGrpcTransport({ baseUrl: harness.url })).check({ service: '' });

    const rpcs = harness.rpcLines();
    expect(rpcs.map((l) => [l['rpc'], l['code'], l['reason']])).toEqual([
      ['/docket.testing.v1.ProbeService/Echo', 'ok', undefined],
      ['/docket.testing.v1.ProbeService/Echo', 'invalid_argument', 'INVALID_FIELD'],
      ['/docket.testing.v1.ProbeService/Count', 'ok', undefined],
      ['/grpc.health.v1.Health/Check', 'ok', undefined],
    ]);
    expect(rpcs[0]).toMatchObject({ level: 'debug', service: 'probe', request_id: 'req-1' });
    expect(rpcs[1]).toMatchObject({ level: 'info' });
    expect(rpcs[1]!['request_id']).toMatch(/^[0-9a-f-]{36}$/);
    for (const line of rpcs) expect(typeof line['latency_ms']).toBe('number');
    const log = harness.lines.join('\n');
    expect(log).not.toContain(token);
    expect(log).not.toContain('invalid request');
    expect(log).not.toContain('hello');
  });

  it('at the default level, logs failures and slow calls but not each successful one', async () => {
    const harness = await probeServer({}, 'info');
    const token = await harness.token();
    const probe = createClient(ProbeService, createGrpcTransport({ baseUrl: harness.url }));
    const headers = { authorization: `Bearer ${token}` };
    await probe.echo({ text: 'hello' }, { headers });
    for await (const _ of probe.count({ text: 'n', count: 2 }, { headers })) {
      // drain
    }
    await probe.echo({ text: 'docket-error' }, { headers }).catch(() => {});
    await probe.echo({ text: 'bug' }, { headers }).catch(() => {});
    await probe.echo({ text: 'sleep:1100' }, { headers });
    expect(harness.rpcLines().map((l) => [l['rpc'], l['code'], l['level']])).toEqual([
      ['/docket.testing.v1.ProbeService/Echo', 'invalid_argument', 'info'],
      ['/docket.testing.v1.ProbeService/Echo', 'internal', 'error'],
      ['/docket.testing.v1.ProbeService/Echo', 'ok', 'info'],
    ]);
    expect(Number(harness.rpcLines()[2]!['latency_ms'])).toBeGreaterThan(1_000);
  });

  it('logs a stream its client cancelled as canceled, not ok', async () => {
    const harness = await probeServer();
    const health = createClient(Health, createGrpcTransport({ baseUrl: harness.url }));
    const abort = new AbortController();
    await (async () => {
      for await (const _ of health.watch({ service: '' }, { signal: abort.signal })) abort.abort();
    })().catch(() => {});
    await expect
      .poll(() => harness.rpcLines().find((l) => l['rpc'] === '/grpc.health.v1.Health/Watch'))
      .toMatchObject({ code: 'canceled', reason: 'CANCELLED' });
  });

  it('logs a stream whose client died (its stream reset with INTERNAL_ERROR) as canceled, whether the handler returns or throws', async () => {
    const harness = await probeServer({
      routes: (router) =>
        router.service(ProbeService, {
          ...probeImplementation,
          async *count(request, ctx) {
            yield { text: 'first', sequence: 1 };
            // Waits for the client; its departure rejects the wait with the call's abort reason.
            // Real time: a deliberately endless handler, ended only by the client's departure.
            await sleep(60_000, undefined, { signal: ctx.signal });
          },
        }),
    });
    const token = await harness.token();
    const resetAfterFirstFrame = async (path: string, request: Uint8Array, headers: Record<string, string> = {}) => {
      const call = rawGrpcStream(harness.url, path, request, headers);
      await call.firstData;
      call.reset(http2.constants.NGHTTP2_INTERNAL_ERROR);
    };
    // Health/Watch returns once its call is aborted; the probe's Count throws the abort.
    await resetAfterFirstFrame('/grpc.health.v1.Health/Watch', new Uint8Array());
    await resetAfterFirstFrame('/docket.testing.v1.ProbeService/Count', Uint8Array.from([0x10, 0x01]), { authorization: `Bearer ${token}` });
    for (const rpc of ['/grpc.health.v1.Health/Watch', '/docket.testing.v1.ProbeService/Count']) {
      await expect.poll(() => harness.rpcLines().find((line) => line['rpc'] === rpc)).toMatchObject({ code: 'canceled', reason: 'CANCELLED', level: 'info' });
    }
    expect(harness.lines.filter((line) => line.includes('"level":"error"'))).toEqual([]);
  });

  it('passes the remaining deadline to handlers', async () => {
    const harness = await probeServer();
    const probe = createClient(ProbeService, createGrpcTransport({ baseUrl: harness.url }));
    const reply = await probe.echo(
      { text: 'deadline' },
      { timeoutMs: 60_000, headers: { authorization: `Bearer ${await harness.token()}` } },
    );
    // What is left of the minute once the call arrives: however slow the
    // machine, far more than half, and never more than was sent.
    expect(Number(reply.text)).toBeGreaterThan(30_000);
    expect(Number(reply.text)).toBeLessThanOrEqual(60_000);
  });

  it('refuses work whose deadline has already passed, without running the handler', async () => {
    let calls = 0;
    const harness = await probeServer({
      routes: (router) =>
        router.service(ProbeService, {
          echo: () => {
            calls += 1;
            return { text: 'ran' };
          },
        }),
    });
    const response = await http1Post(harness.url, '/docket.testing.v1.ProbeService/Echo', '{"text":"x"}', {
      'content-type': 'application/json',
      'connect-timeout-ms': '0',
      authorization: `Bearer ${await harness.token()}`,
    });
    expect(response.status).toBe(504);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'deadline_exceeded', message: 'deadline exceeded' });
    expect(calls).toBe(0);
    expect(harness.rpcLines().at(-1)).toMatchObject({ code: 'deadline_exceeded', reason: 'DEADLINE_EXCEEDED' });
  });

  it('refuses to start when routes and services disagree', async () => {
    const options = {
      name: 'probe',
      listen: { host: '127.0.0.1', port: 0 },
      authenticate: { secret: 's'.repeat(40), allowedRoles: ['user'] as const },
      logger: createLogger('probe', () => {}),
    };
    await expect(startServer({ ...options, services: [ProbeService], routes: () => {} })).rejects.toThrow(
      /listed in ServerOptions.services but not routed/,
    );
    await expect(
      startServer({ ...options, services: [], routes: (r) => r.service(ProbeService, probeImplementation) }),
    ).rejects.toThrow(/routed but not listed/);
  });
});

describe('RunningServer.shutdown', () => {
  it('completes promptly while clients hold idle HTTP/2 sessions open', async () => {
    const harness = await startProbeServer();
    const token = await harness.token();
    const connect = createClient(ProbeService, createGrpcTransport({ baseUrl: harness.url }));
    await connect.echo({ text: 'a' }, { headers: { authorization: `Bearer ${token}` } });
    const grpcJs = grpcJsProbe(harness.url);
    await grpcJs.echo('b', { authorization: `Bearer ${token}` });
    const started = Date.now();
    await harness.server.shutdown(30_000);
    // Idle sessions are closed, not waited for: well before the grace period ends.
    expect(Date.now() - started).toBeLessThan(10_000);
    grpcJs.close();
  });

  it('lets an in-flight call finish, then refuses new connections', async () => {
    const arrivals = arrivalProbe();
    const harness = await startProbeServer({ routes: arrivals.routes });
    const token = await harness.token();
    const probe = createClient(ProbeService, createConnectTransport({ baseUrl: harness.url, httpVersion: '2' }));
    const inFlight = probe.echo({ text: 'sleep:300' }, { headers: { authorization: `Bearer ${token}` } });
    await arrivals.reached;
    const stopped = harness.server.shutdown(5_000);
    expect((await inFlight).text).toBe('slept');
    await stopped;
    const fresh = createClient(ProbeService, createConnectTransport({ baseUrl: harness.url, httpVersion: '1.1' }));
    const error = await fresh.echo({ text: 'x' }, { headers: { authorization: `Bearer ${token}` } }).catch((e: unknown) => e);
    expect(ConnectError.from(error).code).toBe(Code.Unavailable);
  });

  it('ends streams that watch the drain signal with their final frame', async () => {
    const harness = await startProbeServer();
    const probe = createClient(ProbeService, createGrpcTransport({ baseUrl: harness.url }));
    const texts: string[] = [];
    let stopped: Promise<void> | undefined;
    for await (const reply of probe.count(
      { text: 'until-drained', count: 1 },
      { headers: { authorization: `Bearer ${await harness.token()}` } },
    )) {
      texts.push(reply.text);
      stopped ??= harness.server.shutdown(30_000);
    }
    expect(texts).toEqual(['until-drained', 'drained']);
    const started = Date.now();
    await stopped;
    // The stream ended on the drain signal: well before the grace period ends.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('holds nothing for a call once it has ended, unary or streaming, over gRPC, Connect or HTTP/1.1', async () => {
    const harness = await startProbeServer();
    const headers = { authorization: `Bearer ${await harness.token()}` };
    const overGrpc = createClient(ProbeService, createGrpcTransport({ baseUrl: harness.url }));
    const overConnect = createClient(ProbeService, createConnectTransport({ baseUrl: harness.url, httpVersion: '1.1' }));
    for (const probe of [overGrpc, overConnect]) {
      await Promise.all(Array.from({ length: 20 }, (_, n) => probe.echo({ text: `e${n}` }, { headers })));
      for await (const _reply of probe.count({ text: 'c', count: 3 }, { headers }));
      const cancelled = new AbortController();
      await (async () => {
        for await (const _reply of probe.count({ text: 'until-drained', count: 1 }, { headers, signal: cancelled.signal })) cancelled.abort();
      })().catch(() => {});
    }
    // A cancelled stream's close reaches the server a moment after the client let go.
    // Real time: the poll interval of this wait (at most 5 s).
    for (let waited = 0; harness.server.callsInFlight() > 0 && waited < 5_000; waited += 50) await sleep(50);
    expect(harness.server.callsInFlight()).toBe(0);
  });

  it('ends a binary gRPC stream that ignores the drain when the grace period ends, with UNAVAILABLE', async () => {
    const harness = await startProbeServer();
    const probe = createClient(ProbeService, createGrpcTransport({ baseUrl: harness.url }));
    const replies: string[] = [];
    let stopped: Promise<void> | undefined;
    const error = await (async () => {
      for await (const reply of probe.count({ text: 'until-aborted', count: 1 }, { headers: { authorization: `Bearer ${await harness.token()}` } })) {
        replies.push(reply.text);
        stopped ??= harness.server.shutdown(300);
      }
    })().catch((e: unknown) => e);
    await stopped;
    expect(replies).toEqual(['until-aborted']);
    expect(ConnectError.from(error).code).toBe(Code.Unavailable);
  });

  it('aborts what is still running when the grace period ends, with UNAVAILABLE', async () => {
    const arrivals = arrivalProbe();
    const harness = await startProbeServer({ routes: arrivals.routes });
    const probe = createClient(ProbeService, createGrpcTransport({ baseUrl: harness.url }));
    const stuck = probe
      .echo({ text: 'sleep:60000' }, { headers: { authorization: `Bearer ${await harness.token()}` } })
      .catch((e: unknown) => e);
    await arrivals.reached;
    const started = Date.now();
    await harness.server.shutdown(300);
    // Ended by the 300 ms grace period, well before the stuck call's minute.
    expect(Date.now() - started).toBeLessThan(10_000);
    const error = await stuck;
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.Unavailable);
    expect(errorInfoOf(error as ConnectError)?.reason).toBe('UNAVAILABLE');
  });
});

import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import type { SessionKeepalive } from '@docket/client-kit';
import { createServiceConnection } from '@docket/client-kit/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorInfoOf, fieldViolationsOf } from './error-mapping.js';
import { ProbeService } from './testing/probe-service.js';
import { PROBE_VIOLATIONS, SECRET_BUG_MESSAGE, startProbeServer, type ProbeHarness } from './testing/probe-server.js';
import { TcpProxy } from '../../../test/support/tcp-proxy.js';

/*
 * The unary calls of Docket's Node clients (@docket/client, the worker
 * SDK, the CLI: `createServiceConnection`), written and read by hand on
 * the HTTP/2 session, against a real Docket server: what a caller relies
 * on from any gRPC client.
 */
let server: ProbeHarness;
let token: string;
beforeAll(async () => {
  server = await startProbeServer();
  token = await server.token('user');
});
afterAll(() => server.server.shutdown(500));

const probe = (options: { token?: string; baseUrl?: string; tracerName?: string; keepalive?: SessionKeepalive } = {}) => {
  const connection = createServiceConnection({ baseUrl: options.baseUrl ?? server.url, token: options.token, tracerName: options.tracerName, keepalive: options.keepalive });
  return { client: createClient(ProbeService, connection.transport), close: () => connection.session.abort() };
};

/** Runs `body` with a probe client (see {@link probe}) whose connection is closed after it, whatever it did. */
async function withProbe(options: Parameters<typeof probe>[0], body: (client: ReturnType<typeof probe>['client']) => Promise<void>): Promise<void> {
  const { client, close } = probe(options);
  try {
    await body(client);
  } finally {
    close();
  }
}

describe("a Node client's unary call", () => {
  it('sends the bearer token and reads the answer', async () => {
    await withProbe({ token }, async (client) => {
      expect((await client.echo({ text: 'who' })).text).toBe('alice/user');
      expect((await client.echo({ text: 'plain', count: 7 })).sequence).toBe(7);
    });
  });

  it('gets the typed error with its details, UNAUTHENTICATED without a token, and never a bug’s message', async () => {
    await withProbe({ token }, async (client) => {
      const typed = (await client.echo({ text: 'docket-error' }).catch((caught: unknown) => caught)) as ConnectError;
      expect([typed.code, errorInfoOf(typed)?.reason]).toEqual([Code.InvalidArgument, 'INVALID_FIELD']);
      expect(fieldViolationsOf(typed)).toEqual(PROBE_VIOLATIONS);
      const bug = (await client.echo({ text: 'bug' }).catch((caught: unknown) => caught)) as ConnectError;
      expect(bug.code).toBe(Code.Internal);
      expect(bug.message).not.toContain(SECRET_BUG_MESSAGE);
      const anonymous = probe();
      const refused = (await anonymous.client.echo({ text: 'who' }).catch((caught: unknown) => caught)) as ConnectError;
      anonymous.close();
      expect(refused.code).toBe(Code.Unauthenticated);
    });
  });

  it('sends its deadline as grpc-timeout, gives up when it passes, and sends none when the caller set none', async () => {
    await withProbe({ token }, async (client) => {
      expect((await client.echo({ text: 'deadline' })).text).toBe('none');
      expect(Number((await client.echo({ text: 'deadline' }, { timeoutMs: 500 })).text)).toBeLessThanOrEqual(500);
      const late = (await client.echo({ text: 'sleep:2000' }, { timeoutMs: 100 }).catch((caught: unknown) => caught)) as ConnectError;
      expect(late.code).toBe(Code.DeadlineExceeded);
    });
  });

  it('stops at once when the caller cancels', async () => {
    await withProbe({ token }, async (client) => {
      const controller = new AbortController();
      const call = client.echo({ text: 'sleep:5000' }, { signal: controller.signal }).catch((caught: unknown) => caught);
      setTimeout(() => controller.abort(), 50);
      expect(((await call) as ConnectError).code).toBe(Code.Canceled);
    });
  });

  it('keeps its deadline while the session is still being opened: an idle session checked by a ping on a network that no longer answers', async () => {
    const { proxy, url } = await TcpProxy.inFrontOf(server.url);
    // A session idle for over 200 ms is checked by a PING before its next call, and only given up on after a minute without its answer.
    await withProbe({ token, baseUrl: url, keepalive: { pingIntervalMs: 200, pingTimeoutMs: 60_000 } }, async (client) => {
      expect((await client.echo({ text: 'who' })).text).toBe('alice/user');
      // Real time: the session goes idle past its ping interval.
      await new Promise((resolve) => setTimeout(resolve, 400));
      proxy.partition();
      const startedAt = performance.now();
      const late = (await client.echo({ text: 'who' }, { timeoutMs: 500 }).catch((caught: unknown) => caught)) as ConnectError;
      expect(late.code).toBe(Code.DeadlineExceeded);
      // Real time: the deadline, not the ping's minute, ended the call.
      expect(performance.now() - startedAt).toBeLessThan(10_000);
    }).finally(() => proxy.close());
  });

  it('is UNAVAILABLE, saying the connection was refused, where nothing listens', async () => {
    await withProbe({ token, baseUrl: 'http://127.0.0.1:9' }, async (client) => {
      const refused = (await client.echo({ text: 'who' }).catch((caught: unknown) => caught)) as ConnectError;
      expect(refused.code).toBe(Code.Unavailable);
      expect(refused.rawMessage).toContain('ECONNREFUSED');
    });
  });

  it('is a CLIENT span of the caller’s trace, through Connect’s path, once an OpenTelemetry SDK is registered', async () => {
    const spans = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    // Whatever an earlier file of this worker left registered goes first: this file's provider is the one.
    trace.disable();
    provider.register();
    const { client, close } = probe({ token, tracerName: '@docket/client' });
    try {
      await client.echo({ text: 'traced' });
      expect(spans.getFinishedSpans().map((span) => span.name)).toContain('docket.testing.v1.ProbeService/Echo');
    } finally {
      close();
      trace.disable();
      await provider.shutdown();
    }
    const after = probe({ token, tracerName: '@docket/client' });
    await after.client.echo({ text: 'untraced' });
    after.close();
    expect(spans.getFinishedSpans()).toHaveLength(0);
  });
});

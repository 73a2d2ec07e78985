import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { createServiceConnection } from '@docket/client-kit/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorInfoOf, fieldViolationsOf } from './error-mapping.js';
import { ProbeService } from './testing/probe-service.js';
import { PROBE_VIOLATIONS, SECRET_BUG_MESSAGE, startProbeServer, type ProbeHarness } from './testing/probe-server.js';

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

const probe = (options: { token?: string; baseUrl?: string; tracerName?: string } = {}) => {
  const connection = createServiceConnection({ baseUrl: options.baseUrl ?? server.url, token: options.token, tracerName: options.tracerName });
  return { client: createClient(ProbeService, connection.transport), close: () => connection.session.abort() };
};

describe("a Node client's unary call", () => {
  it('sends the bearer token and reads the answer', async () => {
    const { client, close } = probe({ token });
    try {
      expect((await client.echo({ text: 'who' })).text).toBe('alice/user');
      expect((await client.echo({ text: 'plain', count: 7 })).sequence).toBe(7);
    } finally {
      close();
    }
  });

  it('gets the typed error with its details, UNAUTHENTICATED without a token, and never a bug’s message', async () => {
    const { client, close } = probe({ token });
    try {
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
    } finally {
      close();
    }
  });

  it('sends its deadline as grpc-timeout, gives up when it passes, and sends none when the caller set none', async () => {
    const { client, close } = probe({ token });
    try {
      expect((await client.echo({ text: 'deadline' })).text).toBe('none');
      expect(Number((await client.echo({ text: 'deadline' }, { timeoutMs: 500 })).text)).toBeLessThanOrEqual(500);
      const late = (await client.echo({ text: 'sleep:2000' }, { timeoutMs: 100 }).catch((caught: unknown) => caught)) as ConnectError;
      expect(late.code).toBe(Code.DeadlineExceeded);
    } finally {
      close();
    }
  });

  it('stops at once when the caller cancels', async () => {
    const { client, close } = probe({ token });
    try {
      const controller = new AbortController();
      const call = client.echo({ text: 'sleep:5000' }, { signal: controller.signal }).catch((caught: unknown) => caught);
      setTimeout(() => controller.abort(), 50);
      expect(((await call) as ConnectError).code).toBe(Code.Canceled);
    } finally {
      close();
    }
  });

  it('is UNAVAILABLE, saying the connection was refused, where nothing listens', async () => {
    const { client, close } = probe({ token, baseUrl: 'http://127.0.0.1:9' });
    try {
      const refused = (await client.echo({ text: 'who' }).catch((caught: unknown) => caught)) as ConnectError;
      expect(refused.code).toBe(Code.Unavailable);
      expect(refused.rawMessage).toContain('ECONNREFUSED');
    } finally {
      close();
    }
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

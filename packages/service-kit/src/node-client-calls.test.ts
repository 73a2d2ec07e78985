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
import { PushedMessages } from '@docket/client-kit';

/*
 * The unary and bidirectional calls of Docket's Node clients
 * (@docket/client, the worker SDK, the CLI: `createServiceConnection`),
 * written and read by hand on the HTTP/2 session, against a real Docket
 * server: what a caller relies on from any gRPC client.
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

/** The turn of the event loop it is now, counted from the first call: calls made in one turn see one number. */
function turnCounter(): () => number {
  let turn = 0;
  let armed = false;
  return () => {
    if (!armed) {
      armed = true;
      setImmediate(() => {
        turn += 1;
        armed = false;
      });
    }
    return turn;
  };
}

describe("a Node client's bidirectional call (the worker session's)", () => {
  it('sends the bearer token, answers each request while the client still writes, and ends OK when the requests end', async () => {
    await withProbe({ token }, async (client) => {
      const requests = new PushedMessages<{ text: string; count?: number }>();
      const seen: string[] = [];
      requests.push({ text: 'who' });
      for await (const reply of client.converse(requests)) {
        seen.push(`${reply.text}${reply.sequence}`);
        if (seen.length === 1) requests.push({ text: 'b', count: 2 });
        if (seen.length === 3) requests.close();
      }
      expect(seen).toEqual(['who1', 'b2', 'b3']);
    });
  });

  it('writes the requests made together in one write, which the server reads in one turn, and gets their answers together', async () => {
    const now = turnCounter();
    const turns: number[] = [];
    const together = await startProbeServer({
      routes: (router) =>
        router.service(ProbeService, {
          async *converse(requests) {
            for await (const request of requests) {
              turns.push(now());
              yield { text: request.text, sequence: turns.length };
            }
          },
        }),
    });
    try {
      await withProbe({ token: await together.token('user'), baseUrl: together.url }, async (client) => {
        const clientTurn = turnCounter();
        const requests = new PushedMessages<{ text: string; count?: number }>();
        const answeredIn: number[] = [];
        const reading = (async () => {
          for await (const reply of client.converse(requests)) {
            answeredIn.push(clientTurn());
            if (reply.sequence === 32) requests.close();
            if (reply.sequence === 16) for (let index = 0; index < 16; index++) requests.push({ text: `second-${index}` });
          }
        })();
        for (let index = 0; index < 16; index++) requests.push({ text: `first-${index}` });
        await reading;
        // Two bursts of sixteen, each read by the server in one turn and answered to the client in one.
        expect(new Set(turns.slice(0, 16)).size).toBe(1);
        expect(new Set(turns.slice(16)).size).toBe(1);
        expect(new Set(answeredIn.slice(0, 16)).size).toBe(1);
        expect(new Set(answeredIn.slice(16)).size).toBe(1);
      });
    } finally {
      await together.server.shutdown(500);
    }
  });

  it('stops taking requests while the server does not read them (HTTP/2 flow control), then sends every one, in order', async () => {
    let reading: () => void = () => {};
    const mayRead = new Promise<void>((resolve) => (reading = resolve));
    const received: number[] = [];
    const slow = await startProbeServer({
      routes: (router) =>
        router.service(ProbeService, {
          async *converse(requests) {
            await mayRead;
            for await (const request of requests) received.push(request.count);
            yield { text: 'done', sequence: received.length };
          },
        }),
    });
    try {
      await withProbe({ token: await slow.token('user'), baseUrl: slow.url }, async (client) => {
        let taken = 0;
        const requests = async function* () {
          for (let count = 1; count <= 400; count++) {
            taken = count;
            yield { text: 'x'.repeat(16 * 1024), count };
          }
        };
        const answers = (async () => {
          for await (const reply of client.converse(requests())) return reply;
        })();
        // Real time: a server that reads nothing for half a second.
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(taken).toBeGreaterThan(0);
        expect(taken).toBeLessThan(100);
        reading();
        expect((await answers)?.sequence).toBe(400);
        expect(received).toEqual(Array.from({ length: 400 }, (_, index) => index + 1));
      });
    } finally {
      await slow.server.shutdown(500);
    }
  });

  it('ends with the typed error and its details after the answers before it, UNAUTHENTICATED without a token, never a bug’s message', async () => {
    await withProbe({ token }, async (client) => {
      const read = async (texts: string[], on = client) => {
        const requests = new PushedMessages<{ text: string; count?: number }>();
        for (const text of texts) requests.push({ text });
        requests.close();
        const seen: string[] = [];
        try {
          for await (const reply of on.converse(requests)) seen.push(reply.text);
        } catch (caught) {
          return { seen, error: caught as ConnectError };
        }
        return { seen, error: undefined };
      };
      const failed = await read(['a', 'fail']);
      expect([failed.seen, failed.error?.code, errorInfoOf(failed.error!)?.reason]).toEqual([['a'], Code.NotFound, 'NOT_FOUND']);
      const bug = await read(['bug']);
      expect(bug.error?.code).toBe(Code.Internal);
      expect(bug.error?.message).not.toContain(SECRET_BUG_MESSAGE);
      const anonymous = probe();
      const refused = await read(['a'], anonymous.client);
      anonymous.close();
      expect(refused.error?.code).toBe(Code.Unauthenticated);
    });
  });

  it('gives up when its deadline passes and at once when the caller cancels', async () => {
    await withProbe({ token }, async (client) => {
      const quiet = async (options: { timeoutMs?: number; signal?: AbortSignal }) => {
        // No request is ever sent: the server waits for one, and only the deadline or the caller ends the call.
        try {
          for await (const reply of client.converse(new PushedMessages<{ text: string; count?: number }>(), options)) return reply;
        } catch (caught) {
          return (caught as ConnectError).code;
        }
        return 'ended';
      };
      expect(await quiet({ timeoutMs: 100 })).toBe(Code.DeadlineExceeded);
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      expect(await quiet({ signal: controller.signal })).toBe(Code.Canceled);
    });
  });

  it('is UNAVAILABLE, saying the connection was refused, where nothing listens', async () => {
    await withProbe({ token, baseUrl: 'http://127.0.0.1:9' }, async (client) => {
      const requests = new PushedMessages<{ text: string; count?: number }>();
      requests.push({ text: 'a' });
      const refused = await (async () => {
        for await (const reply of client.converse(requests)) return reply;
      })().catch((caught: unknown) => caught as ConnectError);
      expect((refused as ConnectError).code).toBe(Code.Unavailable);
      expect((refused as ConnectError).rawMessage).toContain('ECONNREFUSED');
    });
  });
});

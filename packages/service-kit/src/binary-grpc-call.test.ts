import * as http2 from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { createClient, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import type { ServiceError } from '@grpc/grpc-js';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { LIMITS } from '@docket/contracts';
import { afterEach, describe, expect, it } from 'vitest';
import { isBinaryGrpc } from './binary-grpc-call.js';
import { encodedFrame, frameOf, sharedFrame, writesEncodedFrames } from './shared-frame.js';
import { grpcJsProbe, seenByGrpcJs } from './testing/grpc-js-probe.js';
import { probeImplementation, startProbeServer, type ProbeHarness } from './testing/probe-server.js';
import { rawGrpcStream } from './testing/raw-grpc-stream.js';
import { streamSinkOf } from './stream-sink.js';
import { PushedMessages } from '@docket/client-kit';
import { ProbeReplySchema, ProbeRequestSchema, ProbeService, type ProbeRequest } from './testing/probe-service.js';

let harness: ProbeHarness | undefined;
afterEach(async () => {
  await harness?.server.shutdown(1_000);
  harness = undefined;
});

/** Two replies marked as sent unchanged on many streams. */
const shared = [1, 2].map((sequence) => sharedFrame(create(ProbeReplySchema, { text: 'y'.repeat(1024), sequence })));

/**
 * A probe server whose Count streams `count` replies of 1 KiB as fast as
 * they are taken (with text `shared`, the two shared replies in turn),
 * counting how many the handler produced.
 */
async function countingServer(): Promise<{ produced: () => number }> {
  let produced = 0;
  harness = await startProbeServer({
    routes: (router) =>
      router.service(ProbeService, {
        async *count(request) {
          for (let sequence = 1; sequence <= request.count; sequence++) {
            produced = sequence;
            yield request.text === 'shared' ? shared[sequence % shared.length]! : { text: 'x'.repeat(1024), sequence };
          }
        },
      }),
  });
  return { produced: () => produced };
}

/**
 * A probe server whose Count sends `count` replies of 1 KiB, each offered
 * through the call's sink, in bursts taken in turn by the running handler
 * itself and by a turn of the event loop while the handler is parked
 * (nothing yielded), and yielded only when the sink refuses one or there
 * is no sink. Counts what was offered, refused and produced.
 */
async function offeringServer(): Promise<{ produced: () => number; offered: () => number; refused: () => number; sinks: (boolean | undefined)[] }> {
  let produced = 0;
  let offered = 0;
  let refused = 0;
  const sinks: (boolean | undefined)[] = [];
  harness = await startProbeServer({
    routes: (router) =>
      router.service(ProbeService, {
        async *count(request, ctx) {
          const sink = streamSinkOf(ctx);
          sinks.push(sink !== undefined);
          const reply = (sequence: number) => create(ProbeReplySchema, { text: 'x'.repeat(1024), sequence });
          const burst = (): void => {
            while (sink && produced < request.count && sink.offer(reply(produced + 1))) (produced += 1), (offered += 1);
          };
          for (let turn = 0; produced < request.count; turn += 1) {
            // Offered by the handler as it runs, or, parked, from another turn of the event loop, as a fan-out would.
            if (turn % 2 === 0) burst();
            else await new Promise<void>((resolve) => setImmediate(() => (burst(), resolve())));
            if (produced === request.count) return;
            if (sink) refused += 1;
            produced += 1;
            yield reply(produced);
          }
        },
      }),
  });
  return { produced: () => produced, offered: () => offered, refused: () => refused, sinks };
}

/** A raw HTTP/2 gRPC call of Count, or of `path` with the same one request (see `rawGrpcStream`). */
function rawCount(url: string, token: string, count: number, path = '/docket.testing.v1.ProbeService/Count') {
  const request = toBinary(ProbeRequestSchema, create(ProbeRequestSchema, { text: 'x', count }));
  return rawGrpcStream(url, path, request, { authorization: `Bearer ${token}` });
}

/**
 * Calls Count (or `path`) for 20,000 replies with a client that reads
 * nothing for a second: the client's 64 KiB stream window and the server's
 * write buffer hold a few dozen 1 KiB replies, and the rest must not have
 * been made. Then the client reads on and must get all of them, in order.
 */
async function expectHeldBackThenDelivered(produced: () => number, path?: string, server: ProbeHarness = harness!): Promise<void> {
  const call = rawCount(server.url, await server.token(), 20_000, path);
  call.pause();
  // Real time: a deliberately slow consumer that reads nothing for a second.
  await sleep(1_000);
  expect(produced()).toBeGreaterThan(0);
  expect(produced()).toBeLessThan(500);
  call.resume();
  expect(await call.done).toBe('0');
  expect(call.messages.map((message) => fromBinary(ProbeReplySchema, message).sequence)).toEqual(Array.from({ length: 20_000 }, (_, index) => index + 1));
}

describe('binary gRPC server streams', () => {
  it('are told apart by content type: binary gRPC only', () => {
    expect(['application/grpc', 'application/grpc+proto', 'application/grpc; charset=utf-8'].map(isBinaryGrpc)).toEqual([true, true, true]);
    expect(['application/grpc+json', 'application/grpc-web', 'application/grpc-web+proto', 'application/connect+proto', undefined].map(isBinaryGrpc)).toEqual([false, false, false, false, false]);
  });

  it('hold the handler back while the client does not read (HTTP/2 flow control), then deliver every message in order', async () => {
    const server = await countingServer();
    await expectHeldBackThenDelivered(server.produced);
  });

  it('send the messages a handler makes available in one turn together, in one DATA frame', async () => {
    harness = await startProbeServer({
      routes: (router) =>
        router.service(ProbeService, {
          async *count(request) {
            for (let sequence = 1; sequence <= request.count; sequence++) yield { text: 'x', sequence };
          },
        }),
    });
    const call = rawCount(harness.url, await harness.token(), 16);
    expect(await call.done).toBe('0');
    expect(call.messages).toHaveLength(16);
    // A stream passes one write down at a time: unheld, the first went alone and the other fifteen after it.
    expect(call.pieces()).toBe(1);
  });

  it('write what a handler offers, running or parked, in order with what it yields, refusing offers while the client does not read', async () => {
    const server = await offeringServer();
    // Offers stop once the stream's buffer is full; the refused reply is yielded and waits for the client like any other.
    await expectHeldBackThenDelivered(server.produced);
    expect(server.offered()).toBeGreaterThan(10_000);
    expect(server.refused()).toBeGreaterThan(0);
    expect(server.sinks).toEqual([true]);
  });

  it('give no sink to a Connect call, whose handler yields everything', async () => {
    const server = await offeringServer();
    const client = createClient(ProbeService, createConnectTransport({ baseUrl: harness!.url, httpVersion: '2' }));
    const seen: number[] = [];
    for await (const reply of client.count({ count: 50 }, { headers: { authorization: `Bearer ${await harness!.token()}` } })) seen.push(reply.sequence);
    expect(seen).toEqual(Array.from({ length: 50 }, (_, index) => index + 1));
    expect([server.sinks, server.offered()]).toEqual([[false], 0]);
  });

  it('refuse an offer made after the token that opened the stream expired, even before the expiry timer ran', async () => {
    const answers: boolean[] = [];
    harness = await startProbeServer({
      routes: (router) =>
        router.service(ProbeService, {
          async *count(_request, ctx) {
            const sink = streamSinkOf(ctx)!;
            answers.push(sink.offer(create(ProbeReplySchema, { sequence: 1 })));
            await new Promise<void>((resolve) =>
              setImmediate(() => {
                // Past the token's one second without yielding to the event loop, so its expiry timer cannot have fired.
                const until = Date.now() + 1_100;
                while (Date.now() < until);
                answers.push(sink.offer(create(ProbeReplySchema, { sequence: 2 })));
                resolve();
              }),
            );
            await new Promise(() => {}); // parked until the expiry ends the stream
          },
        }),
    });
    const call = rawCount(harness.url, await harness.token('user', { ttlSeconds: 1 }), 2);
    expect(await call.done).toBe('16');
    expect(answers).toEqual([true, false]);
    expect(call.messages.map((message) => fromBinary(ProbeReplySchema, message).sequence)).toEqual([1]);
  });

  it('send a shared reply as the same bytes on every stream, as any client decodes it', async () => {
    await countingServer();
    const client = createClient(ProbeService, createGrpcTransport({ baseUrl: harness!.url }));
    const token = await harness!.token();
    const read = async () => {
      const seen: number[] = [];
      for await (const reply of client.count({ text: 'shared', count: 4 }, { headers: { authorization: `Bearer ${token}` } })) seen.push(reply.sequence);
      return seen;
    };
    expect(await Promise.all([read(), read()])).toEqual([
      [2, 1, 2, 1],
      [2, 1, 2, 1],
    ]);
  });
});

describe('sharedFrame', () => {
  it('encodes a shared message once and any other message on every call', () => {
    let encodings = 0;
    const encode = () => {
      encodings += 1;
      return Buffer.from([encodings]);
    };
    const once = sharedFrame({ kind: 'page' });
    expect([frameOf(once, encode), frameOf(once, encode)].map((frame) => frame[0])).toEqual([1, 1]);
    const every = { kind: 'heartbeat' };
    expect([frameOf(every, encode), frameOf(every, encode)].map((frame) => frame[0])).toEqual([2, 3]);
  });
});

/**
 * The probe's Echo, plus `encoded`: answered with an `encodedFrame` (a
 * reply that says `from-frame`) when the call writes encoded frames, and
 * with a plain message (`from-message`) otherwise.
 */
function echoWithEncoded(request: ProbeRequest, ctx: HandlerContext) {
  if (request.text !== 'encoded') return probeImplementation.echo!(request, ctx);
  if (!writesEncodedFrames(ctx)) return Promise.resolve({ text: 'from-message' });
  const bytes = toBinary(ProbeReplySchema, create(ProbeReplySchema, { text: 'from-frame', sequence: 9 }));
  return Promise.resolve(encodedFrame(create(ProbeReplySchema), bytes.byteLength, (into) => into.set(bytes)));
}

/**
 * A probe server with Echo as {@link echoWithEncoded}, answered by the
 * writer when `written`, by Connect otherwise (a service registered with
 * options of its own, even none, is left to Connect).
 */
async function echoServer(written: boolean): Promise<ProbeHarness> {
  const implementation = { ...probeImplementation, echo: echoWithEncoded };
  return startProbeServer({
    routes: (router) => (written ? router.service(ProbeService, implementation) : router.service(ProbeService, implementation, {})),
  });
}

/** A gRPC message envelope of `message`. */
function envelope(message: Uint8Array, declaredLength = message.byteLength): Buffer {
  const frame = Buffer.alloc(5 + message.byteLength);
  frame.writeUInt32BE(declaredLength, 1);
  frame.set(message, 5);
  return frame;
}

/** What a client sees of a unary answer: its status, message and details, and the replies it carried. */
interface SeenAnswer {
  readonly status: string | undefined;
  readonly message: string | undefined;
  readonly details: string | undefined;
  readonly replies: { text: string; sequence: number }[];
}

/** A binary gRPC call of Echo whose request stream is exactly `body`, over its own HTTP/2 session. */
function rawEcho(url: string, body: Uint8Array, headers: Record<string, string>): Promise<SeenAnswer> {
  return rawCall(url, '/docket.testing.v1.ProbeService/Echo', body, headers);
}

/** A binary gRPC call of `path` whose request stream is exactly `body`, over its own HTTP/2 session. */
async function rawCall(url: string, path: string, body: Uint8Array, headers: Record<string, string>): Promise<SeenAnswer> {
  const session = http2.connect(url);
  session.on('error', () => {});
  try {
    const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...headers });
    stream.on('error', () => {});
    stream.end(body);
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      let headersOnly: http2.IncomingHttpHeaders | undefined;
      stream.on('response', (answer) => {
        if (answer['grpc-status'] !== undefined) headersOnly = answer;
      });
      stream.on('trailers', resolve);
      stream.on('close', () => (headersOnly ? resolve(headersOnly) : reject(new Error('the stream closed without trailers'))));
    });
    let data = Buffer.concat(chunks);
    const replies: SeenAnswer['replies'] = [];
    while (data.byteLength >= 5) {
      const reply = fromBinary(ProbeReplySchema, data.subarray(5, 5 + data.readUInt32BE(1)));
      replies.push({ text: reply.text, sequence: reply.sequence });
      data = data.subarray(5 + data.readUInt32BE(1));
    }
    const text = (name: string) => trailers[name] as string | undefined;
    return { status: text('grpc-status'), message: text('grpc-message'), details: text('grpc-status-details-bin'), replies };
  } finally {
    session.close();
  }
}

describe('binary gRPC unary calls a server writes itself', () => {
  const servers: ProbeHarness[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.server.shutdown(1_000)));
  });

  it('answer every request, and refuse every bad one, exactly as Connect answers it', async () => {
    const [connect, written] = [await echoServer(false), await echoServer(true)];
    servers.push(connect, written);
    const token = await connect.token();
    const auth = { authorization: `Bearer ${token}` };
    const request = (text: string, count = 0) => toBinary(ProbeRequestSchema, create(ProbeRequestSchema, { text, count }));
    const cases: Record<string, { body: Uint8Array; headers: Record<string, string> }> = {
      answered: { body: envelope(request('hello', 7)), headers: auth },
      'a DocketError with field violations': { body: envelope(request('docket-error')), headers: auth },
      'an unexpected Error': { body: envelope(request('bug')), headers: auth },
      'no token': { body: envelope(request('hello')), headers: {} },
      'a body that is not the request': { body: envelope(Uint8Array.of(0xff, 0xff, 0xff, 0xff)), headers: auth },
      'no message': { body: new Uint8Array(0), headers: auth },
      'a message cut short': { body: envelope(request('hello')).subarray(0, 8), headers: auth },
      'two messages': { body: Buffer.concat([envelope(request('a')), envelope(request('b'))]), headers: auth },
      'a length prefix over the limit': { body: envelope(request('hello'), LIMITS.admissionRequestBytes + 1), headers: auth },
      'an unparsable grpc-timeout': { body: envelope(request('hello')), headers: { ...auth, 'grpc-timeout': 'soon' } },
      'a deadline that passes': { body: envelope(request('sleep:2000')), headers: { ...auth, 'grpc-timeout': '100m' } },
      'an unsupported compression': { body: envelope(request('hello')), headers: { ...auth, 'grpc-encoding': 'snappy' } },
    };
    for (const [name, { body, headers }] of Object.entries(cases)) {
      const [byConnect, byWriter] = await Promise.all([rawEcho(connect.url, body, headers), rawEcho(written.url, body, headers)]);
      expect(byWriter, name).toEqual(byConnect);
    }
    // The cases reach every outcome, not one failure many times.
    const statuses = await Promise.all(Object.values(cases).map(({ body, headers }) => rawEcho(written.url, body, headers).then((seen) => seen.status)));
    expect(new Set(statuses)).toEqual(new Set(['0', '3', '4', '12', '13', '16']));
  });

  it('log each call once, as Connect does, and pass the deadline to the handler', async () => {
    const written = await echoServer(true);
    servers.push(written);
    const client = createClient(ProbeService, createGrpcTransport({ baseUrl: written.url }));
    const headers = { authorization: `Bearer ${await written.token()}` };
    const remaining = Number((await client.echo({ text: 'deadline' }, { headers, timeoutMs: 5_000 })).text);
    expect(remaining).toBeGreaterThan(4_000);
    expect(remaining).toBeLessThanOrEqual(5_000);
    await client.echo({ text: 'docket-error' }, { headers }).catch(() => undefined);
    expect(written.rpcLines().map((line) => [line['rpc'], line['code'], line['reason']])).toEqual([
      ['/docket.testing.v1.ProbeService/Echo', 'ok', undefined],
      ['/docket.testing.v1.ProbeService/Echo', 'invalid_argument', 'INVALID_FIELD'],
    ]);
  });

  it('send an encodedFrame answer as its bytes to gRPC clients (grpc-js and Connect), and a message on every other protocol or service left to Connect', async () => {
    const [connect, written] = [await echoServer(false), await echoServer(true)];
    servers.push(connect, written);
    const headers = { authorization: `Bearer ${await written.token()}` };
    const grpcJs = grpcJsProbe(written.url);
    try {
      expect(await grpcJs.echo('encoded', headers)).toMatchObject({ text: 'from-frame', sequence: 9 });
    } finally {
      grpcJs.close();
    }
    const echo = (url: string, transport: 'grpc' | 'connect') =>
      createClient(ProbeService, transport === 'grpc' ? createGrpcTransport({ baseUrl: url }) : createConnectTransport({ baseUrl: url, httpVersion: '2' }))
        .echo({ text: 'encoded' }, { headers })
        .then((reply) => [reply.text, reply.sequence]);
    expect(await Promise.all([echo(written.url, 'grpc'), echo(written.url, 'connect'), echo(connect.url, 'grpc')])).toEqual([
      ['from-frame', 9],
      ['from-message', 0],
      ['from-message', 0],
    ]);
  });
});

/** The next reply (or the error) a grpc-js duplex call gives. */
function nextReply(call: ReturnType<ReturnType<typeof grpcJsProbe>['converse']>): Promise<{ text: string; sequence: number }> {
  return new Promise((resolve, reject) => {
    const onData = (reply: { text: string; sequence: number }) => (call.off('error', onError), resolve({ text: reply.text, sequence: reply.sequence }));
    const onError = (error: Error) => (call.off('data', onData), reject(error));
    call.once('data', onData);
    call.once('error', onError);
  });
}

describe('binary gRPC bidirectional streams a server writes itself', () => {
  const servers: ProbeHarness[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.server.shutdown(1_000)));
  });

  /** A probe server whose Converse is answered by the writer when `written`, by Connect otherwise. */
  async function converseServer(written: boolean, implementation: Partial<ServiceImpl<typeof ProbeService>> = probeImplementation): Promise<ProbeHarness> {
    const server = await startProbeServer({
      routes: (router) => (written ? router.service(ProbeService, implementation) : router.service(ProbeService, implementation, {})),
    });
    servers.push(server);
    return server;
  }

  it('answer every request stream, and refuse every bad one, exactly as Connect answers it', async () => {
    const [connect, written] = [await converseServer(false), await converseServer(true)];
    const auth = { authorization: `Bearer ${await connect.token()}` };
    const request = (text: string, count = 0) => envelope(toBinary(ProbeRequestSchema, create(ProbeRequestSchema, { text, count })));
    const cases: Record<string, { body: Uint8Array; headers: Record<string, string> }> = {
      'three requests': { body: Buffer.concat([request('a'), request('b', 3), request('c')]), headers: auth },
      'no request': { body: new Uint8Array(0), headers: auth },
      'a DocketError after a reply': { body: Buffer.concat([request('a'), request('fail'), request('c')]), headers: auth },
      'an unexpected Error after a reply': { body: Buffer.concat([request('a'), request('bug')]), headers: auth },
      'no token': { body: request('a'), headers: {} },
      'a body that is not a request, after one that is': { body: Buffer.concat([request('a'), envelope(Uint8Array.of(0xff, 0xff, 0xff, 0xff))]), headers: auth },
      'a message cut short': { body: Buffer.concat([request('a'), request('b').subarray(0, 8)]), headers: auth },
      'a length prefix over the limit': { body: envelope(Uint8Array.of(10, 1, 0x61), LIMITS.admissionRequestBytes + 1), headers: auth },
      'an unparsable grpc-timeout': { body: request('a'), headers: { ...auth, 'grpc-timeout': 'soon' } },
      'an unsupported compression': { body: request('a'), headers: { ...auth, 'grpc-encoding': 'snappy' } },
    };
    const converse = (url: string, { body, headers }: { body: Uint8Array; headers: Record<string, string> }) => rawCall(url, '/docket.testing.v1.ProbeService/Converse', body, headers);
    for (const [name, call] of Object.entries(cases)) {
      const [byConnect, byWriter] = await Promise.all([converse(connect.url, call), converse(written.url, call)]);
      expect(byWriter, name).toEqual(byConnect);
    }
    const seen = await Promise.all(Object.values(cases).map((call) => converse(written.url, call)));
    expect(new Set(seen.map((answer) => answer.status))).toEqual(new Set(['0', '3', '5', '12', '13', '16']));
    expect(seen[0]?.replies.map((reply) => `${reply.text}${reply.sequence}`)).toEqual(['a1', 'b2', 'b3', 'b4', 'c5']);
    expect(JSON.stringify(seen)).not.toContain('sekrit');
  });

  it('answer each request while the client still writes, to grpc-js and to Connect, and end with the status the handler ended with', async () => {
    const written = await converseServer(true);
    const headers = { authorization: `Bearer ${await written.token()}` };
    const grpcJs = grpcJsProbe(written.url);
    try {
      const call = grpcJs.converse(headers);
      for (const [index, text] of ['a', 'b', 'c'].entries()) {
        const reply = nextReply(call);
        call.write(create(ProbeRequestSchema, { text }));
        // Each reply arrives before the next request is written: nothing waits for the client to half-close.
        expect(await reply).toEqual({ text, sequence: index + 1 });
      }
      const failure = nextReply(call);
      call.write(create(ProbeRequestSchema, { text: 'fail' }));
      expect(seenByGrpcJs((await failure.catch((error: unknown) => error)) as ServiceError)).toMatchObject({ code: 5, reason: 'NOT_FOUND' });
    } finally {
      grpcJs.close();
    }

    const client = createClient(ProbeService, createGrpcTransport({ baseUrl: written.url }));
    const requests = new PushedMessages<{ text: string; count?: number }>();
    const seen: string[] = [];
    requests.push({ text: 'a' });
    for await (const reply of client.converse(requests, { headers })) {
      seen.push(`${reply.text}${reply.sequence}`);
      if (seen.length === 1) requests.push({ text: 'b' });
      else requests.close();
    }
    expect(seen).toEqual(['a1', 'b2']);
  });

  it('hold the handler back while the client does not read (HTTP/2 flow control), then deliver every reply in order', async () => {
    let produced = 0;
    const writers: boolean[] = [];
    await converseServer(true, {
      async *converse(requests, ctx) {
        writers.push(writesEncodedFrames(ctx));
        for await (const request of requests) {
          for (let sequence = 1; sequence <= request.count; sequence++) {
            produced = sequence;
            yield { text: 'x'.repeat(1024), sequence };
          }
        }
      },
    });
    await expectHeldBackThenDelivered(() => produced, '/docket.testing.v1.ProbeService/Converse', servers[0]!);
    // Served by the writer, not by Connect's pipeline.
    expect(writers).toEqual([true]);
  });

  it('end the handler\'s reading of the requests and abort its signal when the client cancels, as Connect does', async () => {
    let ended: (value: string) => void = () => {};
    const end = new Promise<string>((resolve) => (ended = resolve));
    const written = await converseServer(true, {
      async *converse(requests, ctx) {
        const aborted = new Promise<void>((resolve) => (ctx.signal.aborted ? resolve() : ctx.signal.addEventListener('abort', () => resolve(), { once: true })));
        try {
          for await (const request of requests) yield { text: request.text, sequence: 1 };
        } finally {
          void aborted.then(() => ended('ended, its signal aborted'));
        }
      },
    });
    const grpcJs = grpcJsProbe(written.url);
    try {
      const call = grpcJs.converse({ authorization: `Bearer ${await written.token()}` });
      const reply = nextReply(call);
      call.write(create(ProbeRequestSchema, { text: 'a' }));
      await reply;
      call.on('error', () => {});
      call.cancel();
      expect(await end).toBe('ended, its signal aborted');
    } finally {
      grpcJs.close();
    }
  });
});

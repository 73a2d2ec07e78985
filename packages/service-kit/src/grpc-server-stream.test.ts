import { setTimeout as sleep } from 'node:timers/promises';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { afterEach, describe, expect, it } from 'vitest';
import { isBinaryGrpc } from './grpc-server-stream.js';
import { frameOf, sharedFrame } from './shared-frame.js';
import { startProbeServer, type ProbeHarness } from './testing/probe-server.js';
import { rawGrpcStream } from './testing/raw-grpc-stream.js';
import { streamSinkOf } from './stream-sink.js';
import { ProbeReplySchema, ProbeRequestSchema, ProbeService } from './testing/probe-service.js';

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

/** A raw HTTP/2 gRPC call of Count (see `rawGrpcStream`). */
function rawCount(url: string, token: string, count: number) {
  const request = toBinary(ProbeRequestSchema, create(ProbeRequestSchema, { text: 'x', count }));
  return rawGrpcStream(url, '/docket.testing.v1.ProbeService/Count', request, { authorization: `Bearer ${token}` });
}

/**
 * Calls Count for 20,000 replies with a client that reads nothing for a
 * second: the client's 64 KiB stream window and the server's write buffer
 * hold a few dozen 1 KiB replies, and the rest must not have been made.
 * Then the client reads on and must get all of them, in order.
 */
async function expectHeldBackThenDelivered(produced: () => number): Promise<void> {
  const call = rawCount(harness!.url, await harness!.token(), 20_000);
  call.pause();
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

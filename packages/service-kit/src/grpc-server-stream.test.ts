import { setTimeout as sleep } from 'node:timers/promises';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterEach, describe, expect, it } from 'vitest';
import { isBinaryGrpc } from './grpc-server-stream.js';
import { frameOf, sharedFrame } from './shared-frame.js';
import { startProbeServer, type ProbeHarness } from './testing/probe-server.js';
import { rawGrpcStream } from './testing/raw-grpc-stream.js';
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

/** A raw HTTP/2 gRPC call of Count (see `rawGrpcStream`). */
function rawCount(url: string, token: string, count: number) {
  const request = toBinary(ProbeRequestSchema, create(ProbeRequestSchema, { text: 'x', count }));
  return rawGrpcStream(url, '/docket.testing.v1.ProbeService/Count', request, { authorization: `Bearer ${token}` });
}

describe('binary gRPC server streams', () => {
  it('are told apart by content type: binary gRPC only', () => {
    expect(['application/grpc', 'application/grpc+proto', 'application/grpc; charset=utf-8'].map(isBinaryGrpc)).toEqual([true, true, true]);
    expect(['application/grpc+json', 'application/grpc-web', 'application/grpc-web+proto', 'application/connect+proto', undefined].map(isBinaryGrpc)).toEqual([false, false, false, false, false]);
  });

  it('hold the handler back while the client does not read (HTTP/2 flow control), then deliver every message in order', async () => {
    const server = await countingServer();
    const call = rawCount(harness!.url, await harness!.token(), 20_000);
    call.pause();
    await sleep(1_000);
    // The client's 64 KiB stream window and the server's write buffer hold a few dozen 1 KiB replies; the rest were never made.
    expect(server.produced()).toBeGreaterThan(0);
    expect(server.produced()).toBeLessThan(500);
    call.resume();
    expect(await call.done).toBe('0');
    expect(call.messages.map((message) => fromBinary(ProbeReplySchema, message).sequence)).toEqual(Array.from({ length: 20_000 }, (_, index) => index + 1));
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

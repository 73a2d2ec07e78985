import * as http2 from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterEach, describe, expect, it } from 'vitest';
import { isBinaryGrpc } from './grpc-server-stream.js';
import { frameOf, sharedFrame } from './shared-frame.js';
import { startProbeServer, type ProbeHarness } from './testing/probe-server.js';
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

/** A raw HTTP/2 gRPC call of Count, paused until `resume` is called; resolves the replies' sequences. */
function rawCount(url: string, token: string, count: number, text = 'x') {
  const session = http2.connect(url);
  const stream = session.request({
    ':method': 'POST',
    ':path': '/docket.testing.v1.ProbeService/Count',
    'content-type': 'application/grpc',
    te: 'trailers',
    authorization: `Bearer ${token}`,
  });
  const body = toBinary(ProbeRequestSchema, create(ProbeRequestSchema, { text, count }));
  const frame = Buffer.alloc(5 + body.byteLength);
  frame.writeUInt32BE(body.byteLength, 1);
  frame.set(body, 5);
  stream.end(frame);
  stream.pause();
  const sequences: number[] = [];
  let pending = Buffer.alloc(0);
  stream.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.byteLength >= 5 && pending.byteLength >= 5 + pending.readUInt32BE(1)) {
      const length = pending.readUInt32BE(1);
      sequences.push(fromBinary(ProbeReplySchema, pending.subarray(5, 5 + length)).sequence);
      pending = pending.subarray(5 + length);
    }
  });
  const done = new Promise<{ sequences: number[]; status: string | undefined }>((resolve, reject) => {
    stream.on('trailers', (trailers) => resolve({ sequences, status: trailers['grpc-status'] as string | undefined }));
    stream.on('error', reject);
  });
  return {
    resume: () => stream.resume(),
    done: done.finally(() => session.close()),
  };
}

describe('binary gRPC server streams', () => {
  it('are told apart by content type: binary gRPC only', () => {
    expect(['application/grpc', 'application/grpc+proto', 'application/grpc; charset=utf-8'].map(isBinaryGrpc)).toEqual([true, true, true]);
    expect(['application/grpc+json', 'application/grpc-web', 'application/grpc-web+proto', 'application/connect+proto', undefined].map(isBinaryGrpc)).toEqual([false, false, false, false, false]);
  });

  it('hold the handler back while the client does not read (HTTP/2 flow control), then deliver every message in order', async () => {
    const server = await countingServer();
    const call = rawCount(harness!.url, await harness!.token(), 20_000);
    await sleep(1_000);
    // The client's 64 KiB stream window and the server's write buffer hold a few dozen 1 KiB replies; the rest were never made.
    expect(server.produced()).toBeGreaterThan(0);
    expect(server.produced()).toBeLessThan(500);
    call.resume();
    const { sequences, status } = await call.done;
    expect(status).toBe('0');
    expect(sequences).toEqual(Array.from({ length: 20_000 }, (_, index) => index + 1));
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

import { Code, ConnectError } from '@connectrpc/connect';
import { compressionGzip } from '@connectrpc/connect-node';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestMessages, type RequestMessagesOptions } from './request-messages.js';

/** A frame of `data`, flagged compressed or not. */
function frame(data: Uint8Array, compressed = false): Uint8Array {
  const out = new Uint8Array(5 + data.byteLength);
  out[0] = compressed ? 1 : 0;
  new DataView(out.buffer).setUint32(1, data.byteLength);
  out.set(data, 5);
  return out;
}

/** `bytes` cut at `cuts` (offsets, in any order), as a body's chunks. */
function chunked(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const at = [...new Set(cuts.map((cut) => cut % (bytes.byteLength + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let from = 0;
  for (const cut of [...at, bytes.byteLength]) {
    chunks.push(bytes.subarray(from, cut));
    from = cut;
  }
  return chunks;
}

async function* bodyOf(chunks: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield chunk;
}

const options: RequestMessagesOptions = { readMaxBytes: 1024, compression: null, parse: (bytes) => Buffer.from(bytes).toString('hex') };

async function read(chunks: readonly Uint8Array[], with_: Partial<RequestMessagesOptions> = {}): Promise<unknown[]> {
  const messages: unknown[] = [];
  for await (const message of requestMessages(bodyOf(chunks), { ...options, ...with_ })) messages.push(message);
  return messages;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}

describe('requestMessages', () => {
  it('reads every message whole and in order, however the body is cut into chunks', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 6 }), fc.array(fc.nat(), { maxLength: 12 }), async (messages, cuts) => {
        const body = concat(messages.map((message) => frame(message)));
        expect(await read(chunked(body, cuts))).toEqual(messages.map((message) => Buffer.from(message).toString('hex')));
      }),
      { numRuns: 300 },
    );
  });

  it('decompresses the frames flagged compressed with the negotiated compression', async () => {
    const plain = new TextEncoder().encode('a message worth compressing, a message worth compressing');
    const compressed = await compressionGzip.compress(plain);
    const body = concat([frame(compressed, true), frame(plain)]);
    expect(await read(chunked(body, [3, 17, 40]), { compression: compressionGzip })).toEqual([Buffer.from(plain).toString('hex'), Buffer.from(plain).toString('hex')]);
  });

  it("refuses as Connect does: a frame over the limit, a body ending inside a frame, a compressed frame with no compression, the call's own refusal", async () => {
    const refusal = (promise: Promise<unknown>) => promise.then(
      () => undefined,
      (error: unknown) => {
        const failure = ConnectError.from(error);
        return { code: failure.code, message: failure.rawMessage };
      },
    );
    const oversized = frame(new Uint8Array(1025)).subarray(0, 5);
    expect(await refusal(read([oversized]))).toEqual({ code: Code.ResourceExhausted, message: 'message size 1025 is larger than configured readMaxBytes 1024' });
    expect(await refusal(read([frame(new Uint8Array(8)).subarray(0, 9)]))).toEqual({ code: Code.InvalidArgument, message: 'protocol error: incomplete envelope' });
    expect(await refusal(read([new Uint8Array([0, 0])]))).toEqual({ code: Code.InvalidArgument, message: 'protocol error: incomplete envelope' });
    expect(await refusal(read([frame(new Uint8Array(3), true)]))).toEqual({
      code: Code.Internal,
      message: 'received compressed envelope, but do not know how to decompress',
    });
    const bad = new ConnectError('bad header', Code.InvalidArgument);
    expect(await refusal(read([frame(new Uint8Array(3))], { refusal: bad }))).toEqual({ code: Code.InvalidArgument, message: 'bad header' });
  });
});

import { Code, ConnectError } from '@connectrpc/connect';
import { envelopeDecompress, type Compression } from '@connectrpc/connect/protocol';

/** What {@link requestMessages} reads a stream's requests with. */
export interface RequestMessagesOptions {
  /** The largest message accepted, compressed or not, in bytes. */
  readonly readMaxBytes: number;
  /** The request's negotiated compression (null: none was named). */
  readonly compression: Compression | null;
  /** Decodes one message's bytes (Connect's binary serialization of the method's input). */
  readonly parse: (bytes: Uint8Array) => unknown;
  /** A refusal of the whole call (a bad compression or timeout header), raised at the first read. */
  readonly refusal?: ConnectError | undefined;
}

/**
 * The request messages of a binary gRPC stream, read from its body's
 * chunks: each length-prefixed frame split off, decompressed when flagged,
 * decoded. One native async generator where Connect's own chain
 * (`transformSplitEnvelope`, `transformDecompressEnvelope`,
 * `transformParseEnvelope` behind `transformPrepend`) passes every message
 * through four down-levelled ones, whose promise hops per message cost a
 * worker session more than the message's decoding. The refusals are
 * Connect's, word for word: a frame longer than `readMaxBytes` is
 * RESOURCE_EXHAUSTED as soon as its length is read, a body that ends
 * inside a frame INVALID_ARGUMENT, a compressed frame without a
 * negotiated compression INTERNAL.
 */
export async function* requestMessages(body: AsyncIterable<Uint8Array>, options: RequestMessagesOptions): AsyncGenerator<unknown> {
  if (options.refusal) throw options.refusal;
  const { readMaxBytes } = options;
  const chunks: Uint8Array[] = [];
  let buffered = 0;
  /** The next frame's flags and length, once its five bytes are in. */
  let frame: { readonly flags: number; readonly length: number } | undefined;
  for await (const chunk of body) {
    if (chunk.byteLength === 0) continue;
    chunks.push(chunk);
    buffered += chunk.byteLength;
    for (;;) {
      if (frame === undefined) {
        if (buffered < 5) break;
        const head = take(chunks, 5);
        buffered -= 5;
        const length = new DataView(head.buffer, head.byteOffset, 5).getUint32(1);
        if (length > readMaxBytes) throw new ConnectError(`message size ${length} is larger than configured readMaxBytes ${readMaxBytes}`, Code.ResourceExhausted);
        frame = { flags: head[0] as number, length };
      }
      if (buffered < frame.length) break;
      const data = take(chunks, frame.length);
      buffered -= frame.length;
      const { flags } = frame;
      frame = undefined;
      const message = (flags & COMPRESSED) === COMPRESSED ? (await decompressed(flags, data, options)).data : data;
      yield options.parse(message);
    }
  }
  if (frame !== undefined || buffered > 0) throw new ConnectError('protocol error: incomplete envelope', Code.InvalidArgument);
}

/** An empty message's bytes. */
const EMPTY = new Uint8Array(0);

/** The gRPC frame flag of a compressed message. */
const COMPRESSED = 0b01;

function decompressed(flags: number, data: Uint8Array, options: RequestMessagesOptions) {
  return envelopeDecompress({ flags, data }, options.compression, options.readMaxBytes);
}

/**
 * The first `count` bytes of `chunks` (which hold at least that many),
 * removed from them: a view of the first chunk when it holds them all,
 * else a copy (none at all for an empty message).
 */
function take(chunks: Uint8Array[], count: number): Uint8Array {
  if (count === 0) return EMPTY;
  const first = chunks[0] as Uint8Array;
  if (first.byteLength >= count) {
    if (first.byteLength === count) chunks.shift();
    else chunks[0] = first.subarray(count);
    return first.subarray(0, count);
  }
  const taken = new Uint8Array(count);
  let filled = 0;
  while (filled < count) {
    const chunk = chunks[0] as Uint8Array;
    const part = Math.min(chunk.byteLength, count - filled);
    taken.set(chunk.subarray(0, part), filled);
    filled += part;
    if (part === chunk.byteLength) chunks.shift();
    else chunks[0] = chunk.subarray(part);
  }
  return taken;
}

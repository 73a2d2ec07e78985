import { create, fromBinary, isMessage, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { createContextKey, type HandlerContext } from '@connectrpc/connect';
import { frameFor, grpcFrame } from '@docket/client-kit/node';

/**
 * Response messages whose gRPC frame is kept: those marked as sent
 * unchanged on many streams ({@link sharedFrame}; `null` until a frame was
 * encoded), those whose bytes were known before they were sent
 * ({@link knownEncoding}), and placeholders standing for bytes put
 * together upstream ({@link encodedFrame}). Weak: a frame lives as long as
 * the message object does, that is while something still holds it.
 */
const frames = new WeakMap<object, Buffer | null>();

/**
 * Marks `message` as one response that many streams send as it is (the
 * same journal page to every tail of a job at one cursor, the same feed
 * entry to every subscriber of one caller and filter): binary gRPC streams
 * then encode it once for all of them. The message must not change once
 * marked. Returns `message`.
 */
export function sharedFrame<T extends object>(message: T): T {
  if (!frames.has(message)) frames.set(message, null);
  return message;
}

/** `message`'s frame: encoded once if it is a {@link sharedFrame}, otherwise on every call. */
export function frameOf(message: object, encode: () => Buffer): Buffer {
  const known = frames.get(message);
  if (known) return known;
  const frame = encode();
  if (known === null) frames.set(message, frame);
  return frame;
}

/**
 * Marks `message` as one whose encoding is `length` bytes that `write`
 * puts into the array it is given (a protobuf message's bytes, such as
 * ones put together from fields already encoded upstream), written once,
 * straight into the gRPC frame that carries them: a call that writes
 * encoded frames sends those bytes, whatever `message` itself holds, so it
 * may be a placeholder. Only for calls whose handler sees
 * {@link writesEncodedFrames}; the message must not reach any other
 * call. Returns `message`.
 */
export function encodedFrame<T extends object>(message: T, length: number, write: (into: Uint8Array) => void): T {
  const frame = frameFor(length);
  write(frame.subarray(5));
  frames.set(message, frame);
  return message;
}


/**
 * Marks `message` as one whose bytes are known: `encoded`, the bytes
 * `toBinary` gives for it (a response encoded once to be stored, say). A
 * binary gRPC answer that carries it, whole or inside another message put
 * together from encoded parts ({@link encodingOf}), writes those bytes
 * instead of encoding it again. The message must not change afterwards.
 * Returns `message`.
 */
export function knownEncoding<T extends object>(message: T, encoded: Uint8Array): T {
  frames.set(message, grpcFrame(encoded));
  return message;
}

/** `message`'s bytes: those of its frame when it has one ({@link knownEncoding}, {@link encodedFrame}), otherwise encoded now. */
export function encodingOf<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): Uint8Array {
  return frames.get(message)?.subarray(5) ?? toBinary(schema, message);
}

/** Set (true) for the calls whose response messages `serveBinaryGrpc` writes as frames. */
export const encodedFramesKey = createContextKey<boolean>(false, { description: 'docket encoded frames' });

/**
 * Whether this call's response messages are written as encoded frames
 * (`serveBinaryGrpc`: every binary gRPC call), so an {@link encodedFrame}
 * may be sent; other protocols (gRPC-Web, Connect) encode each message.
 */
export function writesEncodedFrames(ctx: HandlerContext): boolean {
  return ctx.values.get(encodedFramesKey);
}

/**
 * A call's answer of `schema` from the bytes of that message, encoded
 * upstream (the state service's answers, passed on as they are): on
 * binary gRPC the bytes go into the answer's frame unchanged
 * ({@link encodedFrame}), on every other protocol they are decoded.
 */
export function encodedAnswer<Desc extends DescMessage>(schema: Desc, encoded: Uint8Array, ctx: HandlerContext): MessageShape<Desc> {
  if (!writesEncodedFrames(ctx)) return fromBinary(schema, encoded);
  return encodedFrame(create(schema), encoded.byteLength, (into) => into.set(encoded));
}

/** One uncompressed gRPC message frame of `message` (encoded once for all streams if it is a {@link sharedFrame}). */
export function envelope(schema: DescMessage, message: unknown): Buffer {
  return typeof message === 'object' && message !== null ? frameOf(message, () => encodeFrame(schema, message)) : encodeFrame(schema, message);
}

function encodeFrame(schema: DescMessage, message: unknown): Buffer {
  return grpcFrame(toBinary(schema, isMessage(message, schema) ? message : create(schema, message as never)));
}

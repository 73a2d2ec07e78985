/**
 * Response messages marked as sent unchanged on many streams, each with its
 * gRPC frame once one was encoded (`null` until then). Weak: a frame lives
 * as long as the message object does, that is while some stream still
 * holds it.
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

/** One uncompressed gRPC message frame: the flag byte, the length, `encoded`. */
export function grpcFrame(encoded: Uint8Array): Buffer {
  const frame = frameFor(encoded.byteLength);
  frame.set(encoded, 5);
  return frame;
}

/** An uncompressed gRPC message frame's flag byte and length, followed by room for the `length` bytes of the message. */
export function frameFor(length: number): Buffer {
  const frame = Buffer.allocUnsafe(5 + length);
  frame[0] = 0;
  frame.writeUInt32BE(length, 1);
  return frame;
}

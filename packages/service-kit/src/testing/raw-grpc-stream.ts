import * as http2 from 'node:http2';

/** A server-streaming gRPC call over a bare HTTP/2 stream, read as the test says. */
export interface RawGrpcStream {
  /** The response messages' bytes taken so far, in order. */
  readonly messages: Uint8Array[];
  /** How many pieces (HTTP/2 DATA frames) the answer's body came in so far. */
  readonly pieces: () => number;
  /** Resolves once the first bytes of the answer arrived. */
  readonly firstData: Promise<void>;
  /** Resolves with `grpc-status` once the answer's trailers arrived (the session is closed then). */
  readonly done: Promise<string | undefined>;
  /** Stops taking data off the stream: HTTP/2 flow control then holds the server back. */
  pause(): void;
  resume(): void;
  /** Resets the stream with `code` (an NGHTTP2 error code) and closes the session. */
  reset(code: number): void;
}

/**
 * Calls `path` with one request message (`request`, encoded) over its own
 * HTTP/2 session, binary gRPC, so the test controls exactly when data is
 * taken off the stream and how the stream ends; Connect and grpc-js
 * clients read as fast as they can and always end a call cleanly.
 */
export function rawGrpcStream(url: string, path: string, request: Uint8Array, headers: Record<string, string> = {}): RawGrpcStream {
  const session = http2.connect(url);
  session.on('error', () => {});
  const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...headers });
  // A stream reset with an error code emits it on this side too.
  stream.on('error', () => {});
  const envelope = Buffer.alloc(5 + request.byteLength);
  envelope.writeUInt32BE(request.byteLength, 1);
  envelope.set(request, 5);
  stream.end(envelope);
  const messages: Uint8Array[] = [];
  let pieces = 0;
  let pending = Buffer.alloc(0);
  const firstData = new Promise<void>((resolve) => stream.once('data', () => resolve()));
  stream.on('data', (chunk: Buffer) => {
    pieces += 1;
    pending = Buffer.concat([pending, chunk]);
    while (pending.byteLength >= 5 && pending.byteLength >= 5 + pending.readUInt32BE(1)) {
      const length = pending.readUInt32BE(1);
      messages.push(pending.subarray(5, 5 + length));
      pending = pending.subarray(5 + length);
    }
  });
  const done = new Promise<string | undefined>((resolve, reject) => {
    stream.on('trailers', (trailers) => resolve(trailers['grpc-status'] as string | undefined));
    stream.on('close', () => reject(new Error('the stream closed without trailers')));
  }).finally(() => session.close());
  done.catch(() => {});
  return {
    messages,
    pieces: () => pieces,
    firstData,
    done,
    pause: () => stream.pause(),
    resume: () => stream.resume(),
    reset: (code) => {
      stream.close(code);
      session.close();
    },
  };
}

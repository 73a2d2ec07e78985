import type { Socket } from 'node:net';

/** The client connection preface every HTTP/2 connection starts with (RFC 9113 section 3.4). */
const HTTP2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** Where {@link sniffProtocol} hands a connection once it knows what it speaks. */
export interface ProtocolTargets {
  /** Receives a prior-knowledge HTTP/2 (h2c) connection. */
  readonly http2: (socket: Socket) => void;
  /** Receives anything else, served as HTTP/1.1. */
  readonly http1: (socket: Socket) => void;
}

/**
 * Reads just enough of a fresh cleartext connection to tell the HTTP/2
 * preface from an HTTP/1.1 request line, puts the bytes back and hands the
 * socket on. Node's h2c server does not answer HTTP/1.1 even with
 * `allowHTTP1` (that only works with TLS ALPN), so this is how one port
 * serves gRPC, gRPC-Web and Connect over HTTP/2 and Connect unary JSON to
 * curl over HTTP/1.1.
 *
 * A connection that stays silent for `idleTimeoutMs` is destroyed.
 *
 * @returns a function that destroys the socket if it is still being sniffed
 */
export function sniffProtocol(socket: Socket, targets: ProtocolTargets, idleTimeoutMs: number): () => void {
  let seen = Buffer.alloc(0);
  let decided = false;
  const onTimeout = (): void => void socket.destroy();
  const onReadable = (): void => {
    for (let chunk = socket.read() as Buffer | null; chunk !== null; chunk = socket.read() as Buffer | null) {
      seen = Buffer.concat([seen, chunk]);
    }
    const compared = Math.min(seen.length, HTTP2_PREFACE.length);
    const isPrefaceSoFar = seen.subarray(0, compared).equals(HTTP2_PREFACE.subarray(0, compared));
    if (isPrefaceSoFar && seen.length < HTTP2_PREFACE.length) return;
    decided = true;
    socket.off('readable', onReadable);
    socket.off('timeout', onTimeout);
    socket.setTimeout(0);
    socket.unshift(seen);
    (isPrefaceSoFar ? targets.http2 : targets.http1)(socket);
  };
  socket.setTimeout(idleTimeoutMs);
  socket.on('timeout', onTimeout);
  socket.on('readable', onReadable);
  return () => {
    if (!decided) socket.destroy();
  };
}

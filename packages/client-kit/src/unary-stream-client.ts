import * as http2 from 'node:http2';
import { create, fromBinary, toBinary, type DescMessage, type DescMethodUnary, type MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, type UnaryResponse } from '@connectrpc/connect';
import type { Http2SessionManager } from '@connectrpc/connect-node';
import { findTrailerError } from '@connectrpc/connect/protocol-grpc';
import { grpcFrame } from './grpc-frame.js';
import { receivedHeaders } from './received-headers.js';

/** What {@link callUnaryStream} needs of its caller: where to send, what to add, when to give up. */
export interface UnaryStreamCall<I extends DescMessage, O extends DescMessage> {
  readonly session: Http2SessionManager;
  readonly method: DescMethodUnary<I, O>;
  readonly input: MessageInitShape<I>;
  /** Header fields to send besides the protocol's (authorization, x-request-id, ...). */
  readonly header: Record<string, string>;
  /** The deadline, sent as `grpc-timeout` and kept locally too; none when undefined. */
  readonly timeoutMs: number | undefined;
  readonly signal: AbortSignal | undefined;
}

/** The reason a call fails when the peer is lost under it: UNAVAILABLE, which callers retry. */
const PEER_LOST = 'the peer service is unavailable';

/**
 * One binary gRPC unary call on a stream of `session`, written and read
 * by hand: the calling side of every internal hop, and of every unary call
 * of Docket's Node clients (`createServiceConnection`). It does what Connect's
 * gRPC transport does for a unary call (the `grpc-timeout` header and a
 * local deadline, cancellation by `signal`, the status from trailers or a
 * trailers-only answer, with ErrorInfo and BadRequest details) without
 * its per-call machinery (a linked AbortController, WHATWG `Headers` both
 * ways, an async-iterator pipeline for one message, a universal request
 * and response). A stream that fails under the call (a reset, a session
 * lost) or an answer that is not gRPC is UNAVAILABLE, as is a CANCELLED or
 * ABORTED answer without details (a peer shutting down); a passed
 * deadline is DEADLINE_EXCEEDED; the caller's own abort rejects with its
 * reason as CANCELLED.
 */
export async function callUnaryStream<I extends DescMessage, O extends DescMessage>(call: UnaryStreamCall<I, O>): Promise<UnaryResponse<I, O>> {
  const { method, signal } = call;
  if (signal?.aborted) throw ConnectError.from(signal.reason, Code.Canceled);
  const frame = grpcFrame(toBinary(method.input, create(method.input, call.input)));
  const headers: http2.OutgoingHttpHeaders = { ...call.header, 'content-type': 'application/grpc+proto', te: 'trailers' };
  if (call.timeoutMs !== undefined) headers['grpc-timeout'] = `${Math.max(1, Math.ceil(call.timeoutMs))}m`;
  return new Promise<UnaryResponse<I, O>>((resolve, reject) => {
    let stream: http2.ClientHttp2Stream | undefined;
    const chunks: Buffer[] = [];
    let responseHeaders: http2.IncomingHttpHeaders | undefined;
    let trailers: http2.IncomingHttpHeaders | undefined;
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      signal?.removeEventListener('abort', onAbort);
      outcome();
    };
    const fail = (error: ConnectError): void =>
      settle(() => {
        if (stream && !stream.closed && !stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
        reject(error);
      });
    // The deadline runs from the start: opening the stream may itself wait on a network that no longer answers (the
    // session manager connecting, or pinging an idle session first).
    const deadline = call.timeoutMs === undefined ? undefined : setTimeout(() => fail(new ConnectError('the deadline passed', Code.DeadlineExceeded)), call.timeoutMs);
    const onAbort = (): void => fail(ConnectError.from(signal?.reason, Code.Canceled));
    signal?.addEventListener('abort', onAbort, { once: true });
    const answer = (opened: http2.ClientHttp2Stream): void => {
      // A stream that opens after the call gave up (its deadline passed, its caller aborted) is cancelled at once.
      if (settled) return void opened.close(http2.constants.NGHTTP2_CANCEL);
      stream = opened;
      opened.on('response', (received) => {
        responseHeaders = received;
      });
      opened.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        call.session.notifyResponseByteRead(opened);
      });
      opened.on('trailers', (received) => {
        trailers = received;
      });
      opened.on('error', (error) => fail(new ConnectError(PEER_LOST, Code.Unavailable, undefined, undefined, error)));
      opened.on('close', () => {
        if (settled) return;
        const status = trailers ?? (responseHeaders?.['grpc-status'] !== undefined ? responseHeaders : undefined);
        if (Number(responseHeaders?.[':status']) !== 200 || status === undefined) return fail(new ConnectError(PEER_LOST, Code.Unavailable));
        const failure = findTrailerError(receivedHeaders(status));
        if (failure) return fail(failure.details.length === 0 && (failure.code === Code.Canceled || failure.code === Code.Aborted) ? new ConnectError(PEER_LOST, Code.Unavailable) : failure);
        const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
        if (body.byteLength < 5 || body[0] !== 0 || body.byteLength !== 5 + body.readUInt32BE(1)) {
          return fail(new ConnectError('the peer answered a unary call without exactly one uncompressed message', Code.Internal));
        }
        let message: UnaryResponse<I, O>['message'];
        try {
          message = fromBinary(method.output, body.subarray(5));
        } catch (error) {
          return fail(new ConnectError('the peer answered a message that does not decode', Code.Internal, undefined, undefined, error));
        }
        settle(() =>
          resolve({
            stream: false,
            service: method.parent,
            method,
            get header() {
              return receivedHeaders(responseHeaders ?? {});
            },
            get trailer() {
              return receivedHeaders(trailers ?? {});
            },
            message,
          }),
        );
      });
      opened.end(frame);
    };
    call.session.request('POST', `/${method.parent.typeName}/${method.name}`, headers, {}).then(answer, (error: unknown) =>
      // The session manager's own UNAVAILABLE says why (`connect ECONNREFUSED 127.0.0.1:7401`).
      fail(error instanceof ConnectError && error.code === Code.Unavailable ? error : new ConnectError(PEER_LOST, Code.Unavailable, undefined, undefined, error)),
    );
  });
}

/** The header fields a caller gave a call (`HeadersInit`, as a transport receives them), as an object. */
export function headerFields(header: ConstructorParameters<typeof Headers>[0]): Record<string, string> {
  const fields: Record<string, string> = {};
  if (header) new Headers(header).forEach((value, key) => (fields[key] = value));
  return fields;
}

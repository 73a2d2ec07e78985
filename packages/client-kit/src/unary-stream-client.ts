import type * as http2 from 'node:http2';
import { create, fromBinary, toBinary, type DescMessage, type DescMethodUnary, type MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, type UnaryResponse } from '@connectrpc/connect';
import type { Http2SessionManager } from '@connectrpc/connect-node';
import { answerFailure, CANCEL, CallEnd, callHeaders, callPath, openingFailure, PEER_LOST } from './call-stream.js';
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
  return new Promise<UnaryResponse<I, O>>((resolve, reject) => {
    let stream: http2.ClientHttp2Stream | undefined;
    const chunks: Buffer[] = [];
    let responseHeaders: http2.IncomingHttpHeaders | undefined;
    let trailers: http2.IncomingHttpHeaders | undefined;
    const fail = (error: ConnectError): void =>
      end.settle(() => {
        if (stream && !stream.closed && !stream.destroyed) stream.close(CANCEL);
        reject(error);
      });
    // The deadline runs from the start: opening the stream may itself wait on a network that no longer answers (the
    // session manager connecting, or pinging an idle session first).
    const end = new CallEnd(call.timeoutMs, signal, fail);
    const settle = (outcome: () => void): void => end.settle(outcome);
    const answer = (opened: http2.ClientHttp2Stream): void => {
      // A stream that opens after the call gave up (its deadline passed, its caller aborted) is cancelled at once.
      if (end.settled) return void opened.close(CANCEL);
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
        if (end.settled) return;
        const failure = answerFailure(responseHeaders, trailers);
        if (failure) return fail(failure);
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
    call.session.request('POST', callPath(method), callHeaders(call.header, call.timeoutMs), {}).then(answer, (error: unknown) => fail(openingFailure(error)));
  });
}

/** The header fields a caller gave a call (`HeadersInit`, as a transport receives them), as an object. */
export function headerFields(header: ConstructorParameters<typeof Headers>[0]): Record<string, string> {
  const fields: Record<string, string> = {};
  if (header) new Headers(header).forEach((value, key) => (fields[key] = value));
  return fields;
}

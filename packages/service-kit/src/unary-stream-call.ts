import * as http2 from 'node:http2';
import { fromBinary } from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  type ContextValues,
  type Interceptor,
  type UnaryRequest,
  type UnaryResponse,
} from '@connectrpc/connect';
import { compressionNegotiate, type Compression } from '@connectrpc/connect/protocol';
import { contentTypeProto, headerAcceptEncoding, parseTimeout, setTrailerStatus } from '@connectrpc/connect/protocol-grpc';
import type { LimitName } from '@docket/contracts';
import { isBinaryGrpc, type UnarySpec } from './binary-grpc-call.js';
import { ServedUnaryCall, chainOf, isOwnResponse, type Chain } from './served-unary-call.js';
import { CALL_ENDED, callAbortKey } from './call-abort.js';
import { http2HeaderView } from './http2-header-view.js';
import { requestDecodeFailure } from './request-bounds.js';
import { finishUnreadUpload } from './unread-upload.js';
import { encodedFramesKey, envelope } from './shared-frame.js';
import type { SignalRelay } from './signal-relay.js';

/** What {@link unaryStreamServer} needs besides the methods. */
export interface UnaryStreamOptions {
  readonly interceptors: readonly Interceptor[];
  readonly readMaxBytes: number;
  /** The service's request-size limit, for the refusal of a request that cannot be read (`requestDecodeFailure`). */
  readonly requestBytes: LimitName;
  readonly acceptCompression: readonly Compression[];
  /** The server's hard stop: a call that made its signal listens to it until it ends. */
  readonly shutdown?: SignalRelay;
  /** The context values every call starts with. */
  readonly contextValues: () => ContextValues;
}

/** Serves a raw HTTP/2 stream when it is a binary gRPC call of a unary method it knows; false otherwise. */
export type UnaryStreamServer = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean;

/** The reason when the client reset the stream before the answer. */
const CLIENT_LEFT = new ConnectError('the client left', Code.Canceled);

/**
 * Binary gRPC unary calls served straight from their HTTP/2 stream: the
 * hot path of every Docket service (each internal hop, every grpc-js,
 * grpcio and Connect gRPC caller). Same contract as Connect's gRPC handler
 * (the same interceptors, in the same order, deadlines from
 * `grpc-timeout`, gzip and brotli requests, the request-size limit as
 * sent and decompressed, trailers with `grpc-status`, `grpc-message` and
 * `grpc-status-details-bin`), without what a call does not need: no
 * compatibility request and response objects, no WHATWG `Headers` copy of
 * the request (see `http2HeaderView`), no async-iterator pipeline for one
 * message, no AbortController unless the handler or an interceptor asks
 * for `signal` (the deadline and the client's departure are tracked
 * without one, see `call-abort.ts`), and the interceptor chain built once
 * per method instead of once per call. Answers are never compressed
 * (`boundedNodeAdapter` says why). Server streams, gRPC-Web, Connect and
 * HTTP/1.1 stay with `serveBinaryGrpc` and Connect's handlers.
 */
export function unaryStreamServer(methods: ReadonlyMap<string, UnarySpec>, options: UnaryStreamOptions): UnaryStreamServer {
  const chains = new Map([...methods].map(([path, spec]) => [path, { spec, chain: chainOf(spec, options.interceptors) }]));
  return (stream, headers) => {
    if (headers[':method'] !== 'POST') return false;
    const method = chains.get(headers[':path'] ?? '');
    if (!method || !isBinaryGrpc(headers['content-type'])) return false;
    new UnaryStreamCall(method.spec, method.chain, options, stream, headers).start();
    return true;
  };
}

/** One call, from its first DATA frame to its trailers. */
class UnaryStreamCall extends ServedUnaryCall {
  readonly #chain: Chain;
  readonly #options: UnaryStreamOptions;
  readonly #stream: http2.ServerHttp2Stream;
  readonly #headers: http2.IncomingHttpHeaders;
  readonly #values: ContextValues;
  #requestHeader: Headers | undefined;
  #answered = false;

  constructor(spec: UnarySpec, chain: Chain, options: UnaryStreamOptions, stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) {
    super(spec, options.shutdown);
    this.#chain = chain;
    this.#options = options;
    this.#stream = stream;
    this.#headers = headers;
    this.#values = options.contextValues();
  }

  start(): void {
    const stream = this.#stream;
    stream.once('close', () => {
      if (!this.#answered) this.abort(CLIENT_LEFT);
    });
    stream.on('error', () => {
      // A reset stream closes; the close says the client left.
    });
    const timeout = parseTimeout(headerValue(this.#headers['grpc-timeout']) ?? null, Number.MAX_SAFE_INTEGER);
    if (timeout.timeoutMs !== undefined) this.deadlineAt = Date.now() + timeout.timeoutMs;
    const compression = compressionNegotiate([...this.#options.acceptCompression], headerValue(this.#headers['grpc-encoding']) ?? null, null, headerAcceptEncoding);
    const chunks: Buffer[] = [];
    let received = 0;
    /** The length prefix, once its five bytes are in: it says at once whether the message may be read at all. */
    let declared: number | undefined;
    let refused = false;
    const limit = this.#options.readMaxBytes;
    stream.on('data', (chunk: Buffer) => {
      if (refused) return;
      received += chunk.byteLength;
      chunks.push(chunk);
      if (declared === undefined && received >= 5) declared = (chunks.length === 1 ? chunk : Buffer.concat(chunks)).readUInt32BE(1);
      if ((declared ?? 0) > limit || received > limit + 5) {
        refused = true;
        chunks.length = 0;
        this.#fail(this.#decodeFailure(new ConnectError(`message size ${Math.max(declared ?? 0, received - 5)} is larger than configured readMaxBytes ${limit}`, Code.ResourceExhausted)));
      }
    });
    stream.once('end', () => {
      if (refused || this.#answered) return;
      // Raised where Connect raises them, before the chain: answered as decode failures are.
      if (compression.error) return this.#fail(this.#decodeFailure(compression.error));
      if (timeout.error) return this.#fail(this.#decodeFailure(timeout.error));
      this.#decode(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks), compression.request).then(
        (message) => this.#run(message),
        (error: unknown) => this.#fail(this.#decodeFailure(ConnectError.from(error, Code.Internal))),
      );
    });
  }

  /** The one message of the body: a complete frame, decompressed if flagged, decoded. */
  async #decode(body: Buffer, compression: Compression | null): Promise<unknown> {
    if (body.byteLength < 5) throw new ConnectError('protocol error: missing input message for unary method', Code.Unimplemented);
    const flags = body[0] as number;
    const length = body.readUInt32BE(1);
    if (body.byteLength < 5 + length) throw new ConnectError('protocol error: promised large message but received fewer bytes', Code.InvalidArgument);
    if (body.byteLength > 5 + length) throw new ConnectError('protocol error: received extra input message for unary method', Code.Unimplemented);
    let bytes: Uint8Array = body.subarray(5);
    if ((flags & 0b01) === 0b01) {
      if (!compression) throw new ConnectError('received compressed message without grpc-encoding', Code.Internal);
      bytes = await compression.decompress(bytes, this.#options.readMaxBytes);
    } else if (flags !== 0) {
      throw new ConnectError(`protocol error: invalid envelope flags ${flags}`, Code.InvalidArgument);
    }
    try {
      return fromBinary(this.spec.method.input, bytes, { readUnknownFields: true });
    } catch (error) {
      throw new ConnectError(`parse binary: ${error instanceof Error ? error.message : String(error)}`, Code.Internal);
    }
  }

  #decodeFailure(error: ConnectError): ConnectError {
    return requestDecodeFailure(error, this.#options.requestBytes);
  }

  async #run(message: unknown): Promise<void> {
    this.#values.set(encodedFramesKey, true);
    this.#values.set(callAbortKey, this.abortState());
    this.beginChain(this.#values);
    const spec = this.spec;
    const call = this;
    const request: UnaryRequest = {
      stream: false,
      service: spec.method.parent,
      method: spec.method as UnaryRequest['method'],
      requestMethod: 'POST',
      url: this.#url(),
      get signal() {
        return call.signal();
      },
      get header() {
        return call.#requestHeaders();
      },
      contextValues: this.#values,
      message: message as UnaryRequest['message'],
    };
    let answer: UnaryResponse;
    try {
      answer = await this.#chain(request);
    } catch (error) {
      return this.#fail(error instanceof ConnectError ? error : new ConnectError('internal error', Code.Internal, undefined, undefined, error));
    }
    this.#answer(answer);
  }

  #answer(answer: UnaryResponse): void {
    if (this.#answered || this.#stream.destroyed || this.#stream.closed) return this.#end();
    const frame = envelope(this.spec.method.output, answer.message);
    // The call's own answer makes its headers and trailers only when something set them.
    const own = isOwnResponse(answer);
    const header = own ? this.responseHeader : answer.header;
    const trailer = own ? this.responseTrailer : answer.trailer;
    const trailers: http2.OutgoingHttpHeaders = {};
    if (trailer) copyInto(trailers, trailer);
    trailers['grpc-status'] = '0';
    this.#respond(header, trailers, frame);
  }

  #fail(error: ConnectError): void {
    if (this.#answered || this.#stream.destroyed || this.#stream.closed) return this.#end();
    const status = new Headers();
    try {
      setTrailerStatus(status, error);
    } catch {
      // A message `encodeURIComponent` refuses (half of a surrogate pair): the status without it.
      const sendable = new ConnectError('', error.code);
      sendable.details = error.details;
      setTrailerStatus(status, sendable);
    }
    const trailers: http2.OutgoingHttpHeaders = {};
    if (this.responseTrailer) copyInto(trailers, this.responseTrailer);
    copyInto(trailers, status);
    this.#respond(this.responseHeader, trailers, undefined);
  }

  /** Writes the answer: headers, the frame (if any), trailers; then ends the call. */
  #respond(header: Headers | undefined, trailers: http2.OutgoingHttpHeaders, frame: Buffer | undefined): void {
    this.#answered = true;
    const stream = this.#stream;
    const headers: http2.OutgoingHttpHeaders = { ':status': 200, 'content-type': contentTypeProto };
    if (header) copyInto(headers, header);
    stream.once('wantTrailers', () => {
      if (!stream.destroyed && !stream.closed) stream.sendTrailers(trailers);
    });
    if (!stream.readableEnded) finishUnreadUpload(stream);
    stream.respond(headers, { waitForTrailers: true });
    stream.end(frame);
    this.#end();
  }

  /** Ends the call: its signal (if made) aborts, so whatever followed it stops. */
  #end(): void {
    this.abort(CALL_ENDED);
    this.endChain(this.#values);
  }

  #url(): string {
    return `http://${headerValue(this.#headers[':authority']) ?? 'localhost'}${headerValue(this.#headers[':path']) ?? ''}`;
  }

  #requestHeaders(): Headers {
    return (this.#requestHeader ??= http2HeaderView(this.#headers));
  }
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

function copyInto(target: http2.OutgoingHttpHeaders, headers: Headers): void {
  headers.forEach((value, key) => {
    target[key] = value;
  });
}

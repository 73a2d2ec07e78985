import type * as http2 from 'node:http2';
import { create, isMessage, toBinary, type DescMessage } from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  createHandlerContext,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
  type StreamRequest,
  type StreamResponse,
  type UnaryRequest,
  type UnaryResponse,
} from '@connectrpc/connect';
import { compressionNegotiate, createMethodSerializationLookup, type Compression, type UniversalServerRequest } from '@connectrpc/connect/protocol';
import { contentTypeProto, grpcStatusOk, headerAcceptEncoding, headerEncoding, headerGrpcStatus, headerTimeout, parseTimeout, setTrailerStatus } from '@connectrpc/connect/protocol-grpc';
import type { LimitName } from '@docket/contracts';
import { requestDecodeFailure } from './request-bounds.js';
import { requestMessages } from './request-messages.js';
import { encodedFramesKey, envelope } from './shared-frame.js';
import type { SignalRelay } from './signal-relay.js';
import { streamSinkKey, type StreamSink } from './stream-sink.js';

/** A server-streaming or bidirectional method's implementation, as Connect's router registered it. */
export type StreamSpec = Extract<MethodImplSpec, { kind: 'server_streaming' | 'bidi_streaming' }>;

/** A unary method's implementation, as Connect's router registered it. */
export type UnarySpec = Extract<MethodImplSpec, { kind: 'unary' }>;


/** A call's context as the writer holds it: the handler's, plus ending it. */
type CallContext = ReturnType<typeof createHandlerContext>;

/** What {@link serveBinaryGrpc} needs besides the call. */
export interface BinaryGrpcOptions {
  readonly interceptors: readonly Interceptor[];
  readonly readMaxBytes: number;
  readonly acceptCompression: readonly Compression[];
  /** The server's hard stop, which each call listens to while it runs (it aborts the call's context). */
  readonly shutdown?: SignalRelay;
}

/** Whether a request's content type is binary gRPC (`application/grpc`, `application/grpc+proto`). */
export function isBinaryGrpc(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/grpc(?:\+proto)?(?:;|$)/i.test(contentType);
}

/**
 * A binary gRPC server-streaming call, served as Connect's gRPC handler
 * serves it (the same handler context, request decoding and refusals,
 * interceptors and trailers; the requests read by {@link requestMessages})
 * but with each response message written straight to the HTTP/2 stream:
 * Connect's output pipeline passes every message through about ten
 * down-levelled async generators (serialize, compress, join, catch, the
 * adapter's write loop), which cost more CPU per frame than the frame's
 * own encoding and make most of a stream's garbage. A stream serving a
 * thousand subscribers of one change pays that a thousand times.
 * (Unary calls are served from their raw stream, `unaryStreamServer`.)
 *
 * Back-pressure is HTTP/2's: a message is written only
 * once the previous one fitted the stream's buffer (or drained), so a
 * subscriber that stops reading holds at most one message here; its
 * handler waits meanwhile. While the writer waits for the handler's next
 * message, the handler may also write one straight away through the
 * call's {@link StreamSink} (`streamSinkOf`); the sink refuses while a
 * write waits for the client to drain, and once the call is ending.
 *
 * Answers are never compressed (see `boundedNodeAdapter`).
 */
export async function serveBinaryGrpc(spec: StreamSpec, options: BinaryGrpcOptions, request: UniversalServerRequest, response: http2.Http2ServerResponse): Promise<void> {
  const timeout = parseTimeout(request.header.get(headerTimeout), Number.MAX_SAFE_INTEGER);
  const context = createHandlerContext({
    ...spec,
    service: spec.method.parent,
    requestMethod: request.method,
    protocolName: 'grpc',
    timeoutMs: timeout.timeoutMs,
    requestSignal: request.signal,
    requestHeader: request.header,
    url: request.url,
    responseHeader: { 'content-type': contentTypeProto },
    responseTrailer: { [headerGrpcStatus]: grpcStatusOk },
    contextValues: request.contextValues,
  });
  if (options.shutdown) {
    // Until the call's context ends (its end, the client's cancel, a deadline), however long its handler takes to notice.
    const stopListening = options.shutdown.listen((reason) => context.abort(reason));
    context.signal.addEventListener('abort', stopListening, { once: true });
  }
  const compression = compressionNegotiate([...options.acceptCompression], request.header.get(headerEncoding), null, headerAcceptEncoding);
  const serialization = createMethodSerializationLookup(spec.method, undefined, undefined, { readMaxBytes: options.readMaxBytes, writeMaxBytes: Number.MAX_SAFE_INTEGER });
  const parser = serialization.getI(true);
  const input = requestMessages(request.body as AsyncIterable<Uint8Array>, {
    readMaxBytes: options.readMaxBytes,
    compression: compression.request,
    parse: (bytes) => parser.parse(bytes),
    // Raised inside the chain, as Connect does, so they end as trailer statuses.
    refusal: compression.error ?? timeout.error,
  });
  const writeHead = (): void => {
    if (!response.headersSent) response.writeHead(200, nodeHeaders(context.responseHeader));
  };
  context.values.set(encodedFramesKey, true);
  try {
    const answered = await streamAnswers(spec, options, context, input, response, writeHead);
    if (!answered) return;
  } catch (error) {
    setTrailerStatus(context.responseTrailer, error instanceof ConnectError ? error : new ConnectError('internal error', Code.Internal, undefined, undefined, error));
  } finally {
    context.abort();
  }
  if (response.destroyed || response.stream.closed) return;
  writeHead();
  response.addTrailers(nodeHeaders(context.responseTrailer));
  response.end();
}

/** Writes a server stream's messages, as they come or as they are offered; false when the client went away first. */
async function streamAnswers(
  spec: StreamSpec,
  options: BinaryGrpcOptions,
  context: CallContext,
  input: AsyncIterable<unknown>,
  response: http2.Http2ServerResponse,
  writeHead: () => void,
): Promise<boolean> {
  const output = spec.method.output;
  /** Whether the writer is waiting for the handler's next message, so an offered one goes out in its place. */
  let awaiting = false;
  const sink: StreamSink = {
    offer(message) {
      if (!awaiting || response.destroyed || response.stream.closed || response.stream.writableNeedDrain) return false;
      writeHead();
      corkUntilNextTick(response.stream);
      response.write(envelope(output, message));
      return true;
    },
  };
  context.values.set(streamSinkKey, sink);
  const nextMessage = async (): Promise<IteratorResult<unknown>> => {
    awaiting = true;
    try {
      return await messages!.next();
    } finally {
      awaiting = false;
    }
  };
  let messages: AsyncIterator<unknown> | undefined;
  try {
    const answer = await invokeStream(spec, context, options.interceptors, input);
    copyHeaders(answer.header, context.responseHeader);
    messages = answer.message[Symbol.asyncIterator]();
    // Headers wait for the first message, so the chain may still set some.
    let next = await nextMessage();
    writeHead();
    for (; next.done !== true; next = await nextMessage()) {
      const written = write(response, envelope(output, next.value));
      if (written !== true && !(await written)) return false;
    }
    copyHeaders(answer.trailer, context.responseTrailer);
    return true;
  } finally {
    // The call's context ends before the handler is told to stop, as Connect does.
    context.abort();
    messages?.return?.().catch(() => {});
  }
}

/** Runs the interceptor chain around the implementation, as Connect does for a server-streaming or bidirectional method. */
function invokeStream(spec: StreamSpec, context: HandlerContext, interceptors: readonly Interceptor[], input: AsyncIterable<unknown>): Promise<StreamResponse> {
  let next = async (req: StreamRequest): Promise<StreamResponse> => {
    // A bidirectional handler reads the requests as they arrive; a server-streaming one gets its single request.
    const message = spec.kind === 'bidi_streaming' ? req.message : await single(req.message, 'server-streaming');
    const impl = spec.impl as (message: unknown, context: HandlerContext) => AsyncIterable<unknown>;
    return { ...responseCommon(spec, context), stream: true, message: impl(message, implementationContext(context, req)) } as StreamResponse;
  };
  for (const interceptor of [...interceptors].reverse()) next = interceptor(next as never) as typeof next;
  return next({ ...requestCommon(spec, context), stream: true, message: input } as StreamRequest);
}

/** What every request the chain sees carries, from the call's context. */
function requestCommon(spec: StreamSpec, context: HandlerContext) {
  return {
    method: spec.method,
    requestMethod: context.requestMethod,
    url: context.url,
    signal: context.signal,
    header: context.requestHeader,
    service: spec.method.parent,
    contextValues: context.values,
  };
}

/** What every answer the chain returns carries: the call's own headers and trailers. */
function responseCommon(spec: StreamSpec, context: HandlerContext) {
  return { method: spec.method, service: spec.method.parent, header: context.responseHeader, trailer: context.responseTrailer };
}

/** The context the implementation sees: the call's, as the chain passed the request on. */
function implementationContext(context: HandlerContext, req: StreamRequest): HandlerContext {
  return { ...context, service: req.service, requestHeader: req.header, signal: req.signal, values: req.contextValues };
}

/** The one request message of a unary or server-streaming call (Connect's own refusals when there is none or more). */
async function single(messages: AsyncIterable<unknown>, kind: 'unary' | 'server-streaming'): Promise<unknown> {
  const it = messages[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done === true) throw new ConnectError(`protocol error: missing input message for ${kind} method`, Code.Unimplemented);
  const second = await it.next();
  if (second.done !== true) throw new ConnectError(`protocol error: received extra input message for ${kind} method`, Code.Unimplemented);
  return first.value;
}

/** Writes a frame; resolves false when the stream closed instead of taking it (the client went away). */
function write(response: http2.Http2ServerResponse, frame: Buffer): Promise<boolean> | boolean {
  if (response.destroyed || response.stream.closed) return false;
  corkUntilNextTick(response.stream);
  if (response.write(frame)) return true;
  return new Promise((resolve) => {
    const done = (taken: boolean) => () => {
      response.off('drain', onDrain);
      response.off('close', onClose);
      resolve(taken);
    };
    const onDrain = done(true);
    const onClose = done(false);
    response.once('drain', onDrain);
    response.once('close', onClose);
  });
}

/**
 * Holds the stream's writes until the next tick, so the messages a handler
 * makes available together leave in one write. A Node stream passes one
 * write down at a time and buffers the rest until it completes, which on
 * HTTP/2 is once the data was sent: the first of sixteen answers made in
 * one turn went out alone and the other fifteen after it, and a worker
 * session's calls then reached the service in two groups that never
 * rejoined (each group's calls one transaction). The stream's buffer
 * limit still applies: a write past it returns false and the writer waits
 * for 'drain' as before.
 */
function corkUntilNextTick(stream: http2.ServerHttp2Stream): void {
  if (stream.writableCorked > 0) return;
  stream.cork();
  process.nextTick(() => stream.uncork());
}

function copyHeaders(from: Headers, to: Headers): void {
  if (from === to) return;
  from.forEach((value, key) => to.set(key, value));
}

function nodeHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}

import type * as http from 'node:http';
import * as http2 from 'node:http2';
import { createRegistry } from '@bufbuild/protobuf';
import {
  Code,
  ConnectError,
  createConnectRouter,
  createContextKey,
  createServiceImplSpec,
  type ConnectRouter,
  type ConnectRouterOptions,
  type ContextValues,
  type Interceptor,
} from '@connectrpc/connect';
import { createAsyncIterable, createMethodUrl, encodeEnvelope, type UniversalHandler, type UniversalServerRequest, type UniversalServerResponse } from '@connectrpc/connect/protocol';
import { codeToHttpStatus, errorFromJsonBytes, errorToJsonBytes } from '@connectrpc/connect/protocol-connect';
import { findTrailerError, setTrailerStatus } from '@connectrpc/connect/protocol-grpc';
import { trailerFlag, trailerParse, trailerSerialize } from '@connectrpc/connect/protocol-grpc-web';
import { compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse } from '@connectrpc/connect-node';
import { LIMITS, type LimitName } from '@docket/contracts';
import { file_google_rpc_error_details } from '@docket/proto/google/rpc/error_details_pb.js';
import { isBinaryGrpc, serveBinaryGrpc, type BinaryGrpcOptions, type StreamSpec, type UnarySpec } from './binary-grpc-call.js';
import { inMemoryUnaryServer, type InMemoryUnaryServer } from './in-memory-unary-call.js';
import { unaryStreamServer, type UnaryStreamServer } from './unary-stream-call.js';
import { requestDecodeFailure, type ChainReached } from './request-bounds.js';
import { finishUnreadUpload } from './unread-upload.js';
import type { SignalRelay } from './signal-relay.js';

/** Where the adapter leaves its {@link ChainReached} mark for the outermost interceptor. */
export const chainReachedKey = createContextKey<ChainReached | undefined>(undefined, { description: 'docket chain reached' });

/**
 * Marks that a request entered the interceptor chain (for a unary RPC:
 * that Connect read and decoded its message). Must be the outermost
 * interceptor of a {@link boundedNodeAdapter}.
 */
export function chainReachedMarker(): Interceptor {
  return (next) => (req) => {
    const mark = req.contextValues.get(chainReachedKey);
    if (mark) mark.reached = true;
    return next(req);
  };
}

/**
 * No answer is compressed, whatever the client accepts (gRPC clients such
 * as grpc-js and grpcio offer gzip by default, and Connect would gzip every
 * answer over 1 KiB): a journal or listing page is tens of KiB, and gzip of
 * it costs the service and the client more CPU than the bytes save between
 * a client and a service (about a quarter of a 256-event page's round trip
 * on this project's machines). Compressed requests stay accepted. A link
 * where bandwidth matters compresses at its proxy.
 */
const ANSWERS_UNCOMPRESSED = Number.POSITIVE_INFINITY;

/**
 * The message types a `google.protobuf.Any` in an answer may hold: a
 * batch answer's per-item `google.rpc.Status` (SubmitJobs) carries
 * ErrorInfo and BadRequest, which Connect's JSON needs to know by name.
 */
const ERROR_DETAILS = createRegistry(file_google_rpc_error_details);

/** What {@link boundedNodeAdapter} needs. */
export interface BoundedNodeAdapterOptions extends Omit<ConnectRouterOptions, 'readMaxBytes' | 'acceptCompression' | 'shutdownSignal'> {
  readonly routes: (router: ConnectRouter) => void;
  /** The hard stop: Connect's handlers link to its signal, binary gRPC streams each listen to it. */
  readonly shutdown?: SignalRelay;
  /** The service's request-size limit (its `LIMITS` entry), compressed and decompressed. */
  readonly requestBytes: LimitName;
  readonly fallback: (request: http.IncomingMessage, response: http.ServerResponse) => void;
  /** The context values every call starts with. */
  readonly contextValues: () => ContextValues;
}

/**
 * What a server hands requests to: `unaryStream` first, with every HTTP/2
 * stream (it takes the binary gRPC unary calls it knows, see
 * {@link unaryStreamServer}), then `handle` with the compatibility request
 * and response of everything else.
 */
export interface BoundedHandlers {
  readonly unaryStream: UnaryStreamServer;
  readonly handle: NodeHandler;
  /** Connect's handlers, bounded as on the wire, for callers in this process (`answerInProcess`): their streams. */
  readonly universal: readonly UniversalHandler[];
  /** The unary methods' chains, for callers in this process: their unary calls. */
  readonly inMemoryUnary: InMemoryUnaryServer;
}

type NodeHandler = (
  request: http.IncomingMessage | http2.Http2ServerRequest,
  response: http.ServerResponse | http2.Http2ServerResponse,
) => void;

/**
 * `connectNodeAdapter` with Docket's bounds on what a request may cost
 * before anyone looked at it (SPEC section 9):
 *
 * - Connect reads at most `LIMITS[requestBytes]` bytes of a message, as
 *   sent and after decompression (gzip and brotli, whose decompressors stop
 *   at that size), and refuses a `content-length` or gRPC length prefix over
 *   it before reading the body; the memory an unauthenticated caller can
 *   make a server hold is this limit per stream.
 * - Connect's own failures to read and decode a unary request (they happen
 *   before any interceptor, so the error mapping never sees them) are
 *   answered as {@link requestDecodeFailure}: `INVALID_ARGUMENT` with
 *   `ErrorInfo` on gRPC, gRPC-Web and Connect alike, instead of Connect's
 *   INTERNAL "parse binary" without details. Streaming requests are decoded
 *   inside the chain, where `requestBoundsInterceptor` maps them.
 *
 * The adapter knows a failure was Connect's own when the chain was never
 * entered: `chainReachedMarker` must be the outermost interceptor.
 */
export function boundedNodeAdapter(options: BoundedNodeAdapterOptions): BoundedHandlers {
  const router = createConnectRouter({
    ...options,
    jsonOptions: { registry: ERROR_DETAILS },
    shutdownSignal: options.shutdown?.signal,
    readMaxBytes: LIMITS[options.requestBytes],
    acceptCompression: [compressionGzip, compressionBrotli],
    compressMinBytes: ANSWERS_UNCOMPRESSED,
  });
  const written: WrittenCalls = { unary: new Map(), streams: new Map() };
  options.routes(recordingWrittenCalls(router, written));
  const paths = new Map<string, UniversalHandler>();
  for (const handler of router.handlers) paths.set(handler.requestPath, guardPreChainFailures(handler, options.requestBytes));
  const writtenOptions: BinaryGrpcOptions = {
    interceptors: options.interceptors ?? [],
    readMaxBytes: LIMITS[options.requestBytes],
    acceptCompression: [compressionGzip, compressionBrotli],
    shutdown: options.shutdown,
  };
  const unaryStream = unaryStreamServer(written.unary, {
    ...writtenOptions,
    requestBytes: options.requestBytes,
    contextValues: options.contextValues,
  });
  const handle: NodeHandler = (request, response) => {
    const path = request.url?.split('?', 2)[0] ?? '';
    const writtenCall = 'stream' in request && request.method === 'POST' ? written.streams.get(path) : undefined;
    if (writtenCall && isBinaryGrpc(request.headers['content-type'])) {
      const universal = universalRequestFromNodeRequest(request as never, response as never, undefined, options.contextValues());
      finishUnreadUpload((request as http2.Http2ServerRequest).stream);
      serveBinaryGrpc(writtenCall, writtenOptions, universal, response as http2.Http2ServerResponse).catch(() => {
        // The client went away while the answer was written: nothing to tell anyone.
      });
      return;
    }
    const handler = paths.get(path);
    if (!handler) {
      options.fallback(request as http.IncomingMessage, response as http.ServerResponse);
      return;
    }
    const universal = universalRequestFromNodeRequest(
      request as http.IncomingMessage,
      response as http.ServerResponse,
      undefined,
      options.contextValues(),
    );
    if ('stream' in request) finishUnreadUpload(request.stream);
    handler(universal)
      .then((answer) => {
        // HTTP/1.1: a body answered before it was read to the end would stall the
        // next request on this keep-alive connection; the client reconnects instead.
        if (!('stream' in request) && !request.complete) response.setHeader('connection', 'close');
        return universalResponseToNodeResponse(answer, response as http.ServerResponse);
      })
      .catch(() => {
        // The client went away while the answer was written: nothing to tell anyone.
      });
  };
  const inMemoryUnary = inMemoryUnaryServer(written.unary, { interceptors: writtenOptions.interceptors, shutdown: options.shutdown, contextValues: options.contextValues });
  return { handle, unaryStream, universal: [...paths.values()], inMemoryUnary };
}

/** The methods whose binary gRPC calls Docket serves itself, by request path. */
interface WrittenCalls {
  readonly unary: Map<string, UnarySpec>;
  readonly streams: Map<string, StreamSpec>;
}

/**
 * `router`, noting the unary and server-streaming methods registered
 * through it (by request path), so that binary gRPC calls of them are
 * served by {@link unaryStreamServer} and {@link serveBinaryGrpc}; every other protocol (gRPC-Web,
 * Connect, HTTP/1.1) goes through Connect's own handlers. A service
 * registered with options of its own is left to Connect entirely.
 */
function recordingWrittenCalls(router: ConnectRouter, calls: WrittenCalls): ConnectRouter {
  const recording: ConnectRouter = {
    get handlers() {
      return router.handlers;
    },
    service(service, implementation, serviceOptions) {
      if (!serviceOptions) {
        for (const spec of Object.values(createServiceImplSpec(service, implementation).methods)) {
          if (spec.kind === 'server_streaming' || spec.kind === 'bidi_streaming') calls.streams.set(createMethodUrl('/', spec.method), spec);
          if (spec.kind === 'unary') calls.unary.set(createMethodUrl('/', spec.method), spec);
        }
      }
      router.service(service, implementation, serviceOptions);
      return recording;
    },
    rpc(method, implementation, rpcOptions) {
      router.rpc(method as never, implementation as never, rpcOptions);
      return recording;
    },
  };
  return recording;
}

function guardPreChainFailures(handler: UniversalHandler, requestBytes: LimitName): UniversalHandler {
  const guarded = async (request: UniversalServerRequest): Promise<UniversalServerResponse> => {
    const mark: ChainReached = { reached: false };
    request.contextValues?.set(chainReachedKey, mark);
    const contentType = request.header.get('content-type') ?? '';
    let response: UniversalServerResponse;
    try {
      response = await handler(request);
    } catch (error) {
      // Connect failed to write its own decode error: a JSON parser's
      // report of the body can quote half of a surrogate pair, which
      // `encodeURIComponent` refuses when Connect puts it in `grpc-message`.
      // Unanswered, the call would hang until the client gave up.
      if (mark.reached || handler.method.methodKind !== 'unary') throw error;
      return decodeFailureResponse(contentType, requestDecodeFailure(new ConnectError('undecodable request', Code.InvalidArgument), requestBytes));
    }
    if (mark.reached || handler.method.methodKind !== 'unary') return response;
    const remap = (error: ConnectError): ConnectError => requestDecodeFailure(error, requestBytes);
    if (contentType.startsWith('application/grpc-web')) return remapGrpcWeb(response, remap);
    if (contentType.startsWith('application/grpc')) return remapGrpc(response, remap);
    return remapConnectUnary(response, remap);
  };
  return Object.assign(guarded, {
    protocolNames: handler.protocolNames,
    allowedMethods: handler.allowedMethods,
    supportedContentType: handler.supportedContentType,
    requestPath: handler.requestPath,
    service: handler.service,
    method: handler.method,
  });
}

/** A complete unary error answer in the request's protocol, for when Connect could not write one. */
function decodeFailureResponse(contentType: string, error: ConnectError): UniversalServerResponse {
  const trailer = new Headers();
  setTrailerStatus(trailer, error);
  if (contentType.startsWith('application/grpc-web')) {
    return {
      status: 200,
      header: new Headers({ 'content-type': contentType }),
      body: createAsyncIterable([encodeEnvelope(trailerFlag, trailerSerialize(trailer))]),
    };
  }
  if (contentType.startsWith('application/grpc')) {
    return { status: 200, header: new Headers({ 'content-type': contentType }), body: createAsyncIterable([]), trailer };
  }
  const json = errorToJsonBytes(error, {});
  return {
    status: codeToHttpStatus(error.code),
    header: new Headers({ 'content-type': 'application/json', 'content-length': String(json.byteLength) }),
    body: createAsyncIterable([json]),
  };
}

async function bodyBytes(response: UniversalServerResponse): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  if (response.body !== undefined) for await (const chunk of response.body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Connect unary: the error is the JSON body of a non-200 answer. */
async function remapConnectUnary(response: UniversalServerResponse, remap: (e: ConnectError) => ConnectError): Promise<UniversalServerResponse> {
  const header = new Headers(response.header);
  const body = await bodyBytes(response);
  if (response.status === 200 || header.has('content-encoding') || !(header.get('content-type') ?? '').startsWith('application/json')) {
    return { ...response, body: createAsyncIterable([body]) };
  }
  const original = errorFromJsonBytes(body, undefined, new ConnectError('internal error', Code.Internal));
  const mapped = remap(original);
  if (mapped === original) return { ...response, body: createAsyncIterable([body]) };
  const json = errorToJsonBytes(mapped, {});
  header.set('content-length', String(json.byteLength));
  return { ...response, status: codeToHttpStatus(mapped.code), header, body: createAsyncIterable([json]) };
}

/** gRPC: the status is in the trailer, written once the (empty) body is done. */
async function remapGrpc(response: UniversalServerResponse, remap: (e: ConnectError) => ConnectError): Promise<UniversalServerResponse> {
  const body = await bodyBytes(response);
  const trailer = response.trailer;
  const original = trailer ? findTrailerError(trailer) : undefined;
  if (trailer && original) {
    const mapped = remap(original);
    if (mapped !== original) {
      for (const key of [...trailer.keys()]) if (key.startsWith('grpc-')) trailer.delete(key);
      setTrailerStatus(trailer, mapped);
    }
  }
  return { ...response, body: createAsyncIterable(body.byteLength > 0 ? [body] : []) };
}

/** gRPC-Web: the status is the trailer frame that ends the body. */
async function remapGrpcWeb(response: UniversalServerResponse, remap: (e: ConnectError) => ConnectError): Promise<UniversalServerResponse> {
  const body = await bodyBytes(response);
  const frames: { flags: number; data: Uint8Array }[] = [];
  for (let offset = 0; offset + 5 <= body.byteLength; ) {
    const length = Buffer.from(body.buffer, body.byteOffset + offset + 1, 4).readUInt32BE(0);
    frames.push({ flags: body[offset] ?? 0, data: body.subarray(offset + 5, offset + 5 + length) });
    offset += 5 + length;
  }
  const last = frames.at(-1);
  if (frames.length !== 1 || last === undefined || last.flags !== trailerFlag) return { ...response, body: createAsyncIterable([body]) };
  const original = findTrailerError(trailerParse(last.data));
  if (!original) return { ...response, body: createAsyncIterable([body]) };
  const mapped = remap(original);
  if (mapped === original) return { ...response, body: createAsyncIterable([body]) };
  const trailer = new Headers();
  setTrailerStatus(trailer, mapped);
  return { ...response, body: createAsyncIterable([encodeEnvelope(trailerFlag, trailerSerialize(trailer))]) };
}

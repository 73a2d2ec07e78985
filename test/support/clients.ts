import { create, fromBinary, toBinary, type DescMessage, type DescMethodServerStreaming, type DescMethodUnary, type DescService, type MessageInitShape, type MessageShape } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { ConnectError, createClient, type Client, type Interceptor, type Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import * as grpc from '@grpc/grpc-js';
import { BadRequestSchema, ErrorInfoSchema, type BadRequest, type ErrorInfo } from '@docket/proto/google/rpc/error_details_pb.js';
import { StatusSchema, type Status } from '@docket/proto/google/rpc/status_pb.js';

/** The three wire protocols every Docket service speaks on one port. */
export type Protocol = 'grpc' | 'grpc-web' | 'connect';

/** A Connect transport to `url` over HTTP/2 that sends `token` as a bearer. */
export function transportFor(url: string, protocol: Protocol = 'grpc', token?: string): Transport {
  const bearer: Interceptor = (next) => async (request) => {
    if (token !== undefined) request.header.set('authorization', `Bearer ${token}`);
    return next(request);
  };
  const options = { baseUrl: url, httpVersion: '2' as const, interceptors: [bearer] };
  switch (protocol) {
    case 'grpc':
      return createGrpcTransport(options);
    case 'grpc-web':
      return createGrpcWebTransport(options);
    case 'connect':
      return createConnectTransport(options);
  }
}

/** A typed Connect client for `service` at `url`. */
export function clientFor<S extends DescService>(service: S, url: string, token?: string, protocol: Protocol = 'grpc'): Client<S> {
  return createClient(service, transportFor(url, protocol, token));
}

/**
 * One unary call with the reference gRPC client (@grpc/grpc-js), encoding
 * with protobuf-es. Resolves with the response or rejects with grpc-js's
 * ServiceError.
 */
export async function grpcJsUnary<I extends DescMessage, O extends DescMessage>(
  url: string,
  method: DescMethodUnary<I, O>,
  request: MessageInitShape<I>,
  token?: string,
): Promise<MessageShape<O>> {
  const client = new grpc.Client(new URL(url).host, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (token !== undefined) metadata.set('authorization', `Bearer ${token}`);
  try {
    return await new Promise<MessageShape<O>>((resolve, reject) => {
      client.makeUnaryRequest(
        `/${method.parent.typeName}/${method.name}`,
        (message: MessageShape<I>) => Buffer.from(toBinary(method.input, message)),
        (bytes: Buffer) => fromBinary(method.output, bytes),
        create(method.input, request),
        metadata,
        {},
        (error, response) => (error ? reject(error) : resolve(response as MessageShape<O>)),
      );
    });
  } finally {
    client.close();
  }
}

/** A failure as any client sees it, normalised so that protocols compare. */
export interface SeenFailure {
  readonly code: number;
  readonly message: string;
  readonly reason: string | undefined;
  readonly domain: string | undefined;
  readonly metadata: Record<string, string>;
  readonly violations: { field: string; description: string }[];
}

/** Decodes a Connect client's error. */
export function seenByConnect(error: unknown): SeenFailure {
  if (!(error instanceof ConnectError)) throw new Error(`expected a ConnectError, got ${String(error)}`);
  return seenWith(error.code, error.rawMessage, error.findDetails(ErrorInfoSchema)[0], error.findDetails(BadRequestSchema)[0]);
}

/** Decodes a grpc-js error from its `grpc-status-details-bin` trailer by hand. */
export function seenByGrpcJs(error: unknown): SeenFailure {
  const serviceError = error as grpc.ServiceError;
  if (typeof serviceError?.code !== 'number' || !serviceError.metadata) throw new Error(`expected a grpc-js ServiceError, got ${String(error)}`);
  const [bin] = serviceError.metadata.get('grpc-status-details-bin');
  const status = bin instanceof Buffer ? fromBinary(StatusSchema, bin) : undefined;
  return seenInStatus({ code: serviceError.code, message: serviceError.details, details: status?.details ?? [] });
}

/** A `google.rpc.Status` (a batch item's error, a trailer's details) as a client sees it. */
export function seenInStatus(status: Pick<Status, 'code' | 'message' | 'details'>): SeenFailure {
  const info = status.details.map((any) => anyUnpack(any, ErrorInfoSchema)).find((x) => x !== undefined);
  const badRequest = status.details.map((any) => anyUnpack(any, BadRequestSchema)).find((x) => x !== undefined);
  return seenWith(status.code, status.message, info, badRequest);
}

/** A failure's code and message with the first ErrorInfo and BadRequest found among its details, however the client carried them. */
function seenWith(code: number, message: string, info: ErrorInfo | undefined, badRequest: BadRequest | undefined): SeenFailure {
  return {
    code,
    message,
    reason: info?.reason,
    domain: info?.domain,
    metadata: { ...info?.metadata },
    violations: (badRequest?.fieldViolations ?? []).map((v) => ({ field: v.field, description: v.description })),
  };
}

/** The failure a Connect call ends with; fails the test if it succeeds. */
export async function failureOf(call: Promise<unknown>): Promise<SeenFailure> {
  try {
    await call;
  } catch (error) {
    return seenByConnect(error);
  }
  throw new Error('expected the call to fail, but it succeeded');
}

/** A Connect call's outcome as a value: its response, or its failure as any client sees it. */
export type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: SeenFailure };

/** Awaits a Connect call and returns its outcome instead of throwing, so a burst of calls can be judged one by one. */
export async function settle<T>(call: Promise<T>): Promise<Settled<T>> {
  try {
    return { ok: true, value: await call };
  } catch (error) {
    return { ok: false, failure: seenByConnect(error) };
  }
}

/**
 * One @grpc/grpc-js channel to `url` (one HTTP/2 connection, as a grpc-js
 * application holds it), sending `token` as a bearer, for unary calls and
 * server streams encoded with protobuf-es. Close it when done.
 */
export class GrpcJsChannel {
  readonly #client: grpc.Client;
  readonly #token: string | undefined;

  constructor(url: string, token?: string) {
    this.#client = new grpc.Client(new URL(url).host, grpc.credentials.createInsecure());
    this.#token = token;
  }

  /** One unary call; rejects with grpc-js's ServiceError (see {@link seenByGrpcJs}). */
  unary<I extends DescMessage, O extends DescMessage>(method: DescMethodUnary<I, O>, request: MessageInitShape<I>): Promise<MessageShape<O>> {
    return new Promise<MessageShape<O>>((resolve, reject) => {
      this.#client.makeUnaryRequest(
        `/${method.parent.typeName}/${method.name}`,
        (message: MessageShape<I>) => Buffer.from(toBinary(method.input, message)),
        (bytes: Buffer) => fromBinary(method.output, bytes),
        create(method.input, request),
        this.#metadata(),
        {},
        (error, response) => (error ? reject(error) : resolve(response as MessageShape<O>)),
      );
    });
  }

  /** A server stream, read as an async iterator of its messages; `call.cancel()` ends it early. */
  serverStream<I extends DescMessage, O extends DescMessage>(
    method: DescMethodServerStreaming<I, O>,
    request: MessageInitShape<I>,
  ): { readonly frames: AsyncIterator<MessageShape<O>>; readonly call: grpc.ClientReadableStream<MessageShape<O>> } {
    const call = this.#client.makeServerStreamRequest(
      `/${method.parent.typeName}/${method.name}`,
      (message: MessageShape<I>) => Buffer.from(toBinary(method.input, message)),
      (bytes: Buffer) => fromBinary(method.output, bytes),
      create(method.input, request),
      this.#metadata(),
      {},
    );
    return { frames: (call as AsyncIterable<MessageShape<O>>)[Symbol.asyncIterator](), call };
  }

  close(): void {
    this.#client.close();
  }

  #metadata(): grpc.Metadata {
    const metadata = new grpc.Metadata();
    if (this.#token !== undefined) metadata.set('authorization', `Bearer ${this.#token}`);
    return metadata;
  }
}

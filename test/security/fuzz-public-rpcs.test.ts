import { readFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import { brotliCompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { create, createRegistry, ScalarType, toBinary, toJsonString, type DescField, type DescMessage, type DescMethod, type DescService } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient, type Interceptor, type Transport } from '@connectrpc/connect';
import { compressionGzip, createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { endStreamFromJson, errorFromJsonBytes } from '@connectrpc/connect/protocol-connect';
import { findTrailerError } from '@connectrpc/connect/protocol-grpc';
import { trailerParse } from '@connectrpc/connect/protocol-grpc-web';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receivedHeaders } from '@docket/client-kit/node';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { file_google_rpc_error_details } from '@docket/proto/google/rpc/error_details_pb.js';
import type { Status } from '@docket/proto/google/rpc/status_pb.js';
import { seenByConnect, seenInStatus, type Protocol, type SeenFailure } from '../support/clients.js';
import { startCluster, stopAll, type DocketCluster, type ServiceProcess } from '../support/cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { jsonValueOf } from '../support/json-arbitrary.js';

/*
 * Fuzzing every public RPC (issue 11, evidence): for each method of the
 * three public services, enumerated from the descriptors so that a new RPC
 * is covered the day it is added, fast-check sends
 *   (a) well-shaped requests built by walking the method's input descriptor
 *       (strings with NUL, lone surrogates, huge and empty; integer and float
 *       edge values; nested messages; repeated fields; deep Structs;
 *       Timestamps and Durations out of range), through Connect clients over
 *       gRPC, gRPC-Web and Connect-JSON, with and without gzip;
 *   (b) bodies that are not a request (random bytes as protobuf, random text
 *       as JSON, truncated frames, a compression flag over bytes that are
 *       not compressed), by hand over HTTP/2 to the method's path,
 * and asserts what SPEC section 9 promises a client: a mistake is never
 * INTERNAL, UNKNOWN or DATA_LOSS, every error carries ErrorInfo with domain
 * docket, no service process exits, and resident memory stays bounded.
 *
 * DATA_LOSS is forbidden outright: its only source is a journal whose hash
 * chain does not verify, and nothing in this file (or this fresh database)
 * can corrupt one.
 *
 * Seeds are fixed so that CI is reproducible; DOCKET_SOAK=1 multiplies the
 * runs for a longer local search.
 */

const MIB = 1024 * 1024;
const SOAK = process.env['DOCKET_SOAK'] === '1';
const SEED = 0x0d0c_e7;
const WELL_SHAPED_RUNS = SOAK ? 400 : 24;
const GARBAGE_RUNS = SOAK ? 400 : 24;
/**
 * A service's resident set must stay under this. A Docket service idles at
 * roughly 80-120 MiB; no single request may make it hold more than its
 * request limit (at most 8 MiB, execution) and this file sends one request
 * at a time, so 300 MiB leaves room for V8's heap growth and GC lag but not
 * for a decompressor, decoder or cache that keeps what it was fed.
 */
const RSS_BOUND = 300 * MIB;
/** How long a call may take before the test stops waiting (a long poll, or a stream with nothing to say yet). */
const UNARY_PATIENCE_MS = 3_000;
const STREAM_PATIENCE_MS = 600;
/**
 * The deadline every hand-made request carries (`grpc-timeout`,
 * `connect-timeout-ms`): whatever the body decodes to (a ClaimJobs long
 * poll included), a unary call must be answered by then, so one that is
 * still open at {@link UNARY_PATIENCE_MS} was left hanging by the server.
 */
const RAW_DEADLINE_MS = 1_500;
/** Codes a client mistake must never produce. */
const FORBIDDEN = [Code.Internal, Code.Unknown, Code.DataLoss];

type Role = 'user' | 'admin' | 'worker';

interface PublicService {
  readonly descriptor: DescService;
  readonly server: () => ServiceProcess;
  /** The roles the service admits; each request picks one, so role-gated handlers are reached too. */
  readonly roles: readonly Role[];
}

let cluster: DocketCluster;
const tokens = new Map<Role, string>();
const exits = new Map<string, unknown>();

const SERVICES: readonly PublicService[] = [
  { descriptor: AdmissionService, server: () => cluster.admission, roles: ['user', 'admin'] },
  { descriptor: EventService, server: () => cluster.events, roles: ['user', 'admin'] },
  { descriptor: ExecutionService, server: () => cluster.execution, roles: ['worker'] },
];

beforeAll(async () => {
  const databaseUrl = await createMigratedTestDatabase('fuzz public rpcs');
  cluster = await startCluster({ databaseUrl });
  tokens.set('user', await cluster.tokenFor('fuzz-user', 'user'));
  tokens.set('admin', await cluster.tokenFor('fuzz-admin', 'admin'));
  tokens.set('worker', await cluster.tokenFor('fuzz-worker', 'worker', ['fuzz', 'default']));
  for (const service of SERVICES) {
    void service.server().exited.then((exit) => exits.set(service.descriptor.typeName, exit));
  }
}, 120_000);

afterAll(async () => {
  await stopAll();
});

/** The resident set of a process, in bytes, from /proc. */
function residentBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? Number.NaN) * 1024;
}

/** What a fuzzed call came to: an answer to judge, or nothing to judge (never sent, or we stopped waiting). */
type Outcome = { readonly kind: 'ok' } | { readonly kind: 'failed'; readonly failure: SeenFailure } | { readonly kind: 'not sent' | 'gave up' };

function judge(outcome: Outcome, what: () => string): void {
  if (outcome.kind !== 'failed') return;
  const { failure } = outcome;
  expect(FORBIDDEN, `${Code[failure.code]} ${JSON.stringify(failure)} for ${what()}`).not.toContain(failure.code);
  expect(failure.domain, `no ErrorInfo with domain docket on ${JSON.stringify(failure)} for ${what()}`).toBe('docket');
}

/* ---------- (a) well-shaped requests from the input descriptor ---------- */

const HUGE = 'q'.repeat(3 * MIB);
const stringArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('', 'fuzz', 'default', 'job_00000000000000000000000000', 'op_00000000000000000000000000000000', 'a label') },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.uuid() },
  { weight: 2, arbitrary: fc.constantFrom('\u0000', 'a\u0000b', '\ud800', 'x\udfffy', '\ud83d\ude00', '\u202e\ufeff', 'q'.repeat(17_000), 'q'.repeat(70_000)) },
  { weight: 1, arbitrary: fc.constant(HUGE) },
);
const int32Arb = fc.oneof(fc.integer({ min: -3, max: 300 }), fc.constantFrom(-(2 ** 31), 2 ** 31 - 1, -1, 0), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));
const uint32Arb = fc.oneof(fc.integer({ min: 0, max: 300 }), fc.constantFrom(0, 2 ** 32 - 1, 2 ** 31), fc.integer({ min: 0, max: 2 ** 32 - 1 }));
const int64Arb = fc.oneof(
  fc.bigInt({ min: -3n, max: 1_000n }),
  fc.constantFrom(-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n, -1n, 0n),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
);
const uint64Arb = fc.oneof(fc.bigInt({ min: 0n, max: 1_000n }), fc.constantFrom(0n, 2n ** 64n - 1n, 2n ** 63n), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }));
const doubleArb = fc.oneof(fc.double(), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0, 1e308, 5e-324, 3.5e38));
const floatArb = fc.oneof(fc.float(), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0, 3.4e38));

function scalarArb(scalar: ScalarType, longAsString: boolean): fc.Arbitrary<unknown> {
  const long = (arb: fc.Arbitrary<bigint>) => (longAsString ? arb.map(String) : arb);
  switch (scalar) {
    case ScalarType.STRING:
      return stringArb;
    case ScalarType.BYTES:
      return fc.oneof(fc.uint8Array({ maxLength: 64 }), fc.constant(new Uint8Array(100_000)));
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.DOUBLE:
      return doubleArb;
    case ScalarType.FLOAT:
      return floatArb;
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return int32Arb;
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return uint32Arb;
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return long(int64Arb);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return long(uint64Arb);
  }
}

/** JSON nested `levels` deep, alternating arrays and objects. */
function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i += 1) value = i % 2 === 0 ? [value] : { k: value };
  return value;
}

const jsonArb = jsonValueOf(stringArb, doubleArb);
// Depths at, just over and far over `structDepth` (32), and over the decoder's 100 nested messages.
const structArb = fc.oneof(
  { weight: 4, arbitrary: fc.dictionary(stringArb, jsonArb, { maxKeys: 5 }) },
  { weight: 1, arbitrary: fc.constantFrom(31, 32, 33, 60, 200).map((levels) => ({ deep: nested(levels) })) },
);

const seconds10kYears = 315_576_000_000n;
const timestampArb = fc.oneof(
  fc.record({ seconds: fc.bigInt({ min: 0n, max: 4_000_000_000n }), nanos: fc.integer({ min: 0, max: 999_999_999 }) }),
  fc.record({
    seconds: fc.constantFrom(-62_135_596_800n, -62_135_596_801n, 253_402_300_799n, 253_402_300_800n, -(2n ** 63n), 2n ** 63n - 1n, 0n),
    nanos: fc.constantFrom(0, -1, 999_999_999, 1_000_000_000, -(2 ** 31), 2 ** 31 - 1),
  }),
);
const durationArb = fc.oneof(
  fc.record({ seconds: fc.bigInt({ min: 0n, max: 100n }), nanos: fc.integer({ min: 0, max: 999_999_999 }) }),
  fc.record({
    seconds: fc.constantFrom(seconds10kYears, seconds10kYears + 1n, -seconds10kYears, -seconds10kYears - 1n, 1n, -1n, 0n, 2n ** 63n - 1n, -(2n ** 63n)),
    nanos: fc.constantFrom(0, 1, -1, 999_999_999, -999_999_999, 1_000_000_000, -(2 ** 31)),
  }),
);

const MAX_MESSAGE_DEPTH = 4;

function messageArb(desc: DescMessage, depth = 0): fc.Arbitrary<unknown> {
  switch (desc.typeName) {
    case 'google.protobuf.Struct':
      return structArb;
    case 'google.protobuf.Value':
      return jsonArb;
    case 'google.protobuf.ListValue':
      return fc.array(jsonArb, { maxLength: 4 });
    case 'google.protobuf.Timestamp':
      return timestampArb;
    case 'google.protobuf.Duration':
      return durationArb;
  }
  if (desc.typeName.startsWith('google.protobuf.')) throw new Error(`no generator for ${desc.typeName}: add one`);
  if (depth > MAX_MESSAGE_DEPTH) return fc.constant({});
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const field of desc.fields) {
    if (field.oneof === undefined) model[field.localName] = fieldArb(field, depth);
  }
  for (const oneof of desc.oneofs) {
    model[oneof.localName] = fc.oneof(
      fc.constant(undefined),
      ...oneof.fields.map((field) => singularArb(field, depth).map((value) => ({ case: field.localName, value }))),
    );
  }
  return fc.record(model, { requiredKeys: [] });
}

function singularArb(field: DescField, depth: number): fc.Arbitrary<unknown> {
  switch (field.fieldKind) {
    case 'scalar':
      return scalarArb(field.scalar, field.longAsString);
    case 'enum':
      return fc.oneof(fc.constantFrom(...field.enum.values.map((v) => v.number)), int32Arb);
    case 'message':
      return messageArb(field.message, depth + 1);
    default:
      throw new Error(`${field.fieldKind} is not singular`);
  }
}

function fieldArb(field: DescField, depth: number): fc.Arbitrary<unknown> {
  switch (field.fieldKind) {
    case 'list': {
      const element =
        field.listKind === 'scalar'
          ? scalarArb(field.scalar, field.longAsString)
          : field.listKind === 'enum'
            ? fc.oneof(fc.constantFrom(...field.enum.values.map((v) => v.number)), int32Arb)
            : messageArb(field.message, depth + 1);
      return fc.array(element, { maxLength: 4 });
    }
    case 'map': {
      const key = field.mapKey === ScalarType.STRING ? stringArb : field.mapKey === ScalarType.BOOL ? fc.constantFrom('true', 'false') : int32Arb.map(String);
      const value =
        field.mapKind === 'scalar'
          ? scalarArb(field.scalar, false)
          : field.mapKind === 'enum'
            ? fc.constantFrom(...field.enum.values.map((v) => v.number))
            : messageArb(field.message, depth + 1);
      return fc.dictionary(key, value, { maxKeys: 3 });
    }
    default:
      return singularArb(field, depth);
  }
}

interface Route {
  readonly protocol: Protocol;
  /** Connect only: the JSON codec (false) or binary (true). gRPC and gRPC-Web are binary here. */
  readonly binary: boolean;
  readonly gzip: boolean;
}

const transports = new Map<string, Transport>();
function transportFor(service: PublicService, route: Route, role: Role): Transport {
  const key = `${service.descriptor.typeName} ${route.protocol} ${route.binary} ${route.gzip} ${role}`;
  let transport = transports.get(key);
  if (!transport) {
    const token = tokens.get(role)!;
    const bearer: Interceptor = (next) => (request) => {
      request.header.set('authorization', `Bearer ${token}`);
      return next(request);
    };
    const options = {
      baseUrl: service.server().url,
      httpVersion: '2' as const,
      // Node's default of 10 MB of buffered outgoing data per session is
      // less than the largest request here (execution takes 8 MiB, and the
      // fuzz sends more): past it the client's own session refuses every
      // new stream with ENHANCE_YOUR_CALM, which Connect reports as INTERNAL.
      nodeOptions: { maxSessionMemory: 256 },
      interceptors: [bearer],
      ...(route.gzip ? { sendCompression: compressionGzip, compressMinBytes: 0 } : {}),
    };
    transport =
      route.protocol === 'grpc'
        ? createGrpcTransport(options)
        : route.protocol === 'grpc-web'
          ? createGrpcWebTransport(options)
          : // A batch answer's per-item google.rpc.Status holds ErrorInfo and BadRequest in Anys, which JSON names by type.
            createConnectTransport({ ...options, useBinaryFormat: route.binary, jsonOptions: { registry: createRegistry(file_google_rpc_error_details) } });
    transports.set(key, transport);
  }
  return transport;
}

/**
 * Sends one well-shaped request with a Connect client. A request the client
 * cannot encode (JSON has no NaN, no Timestamp past 9999) is sent in binary
 * instead; one the client cannot encode at all is not sent.
 */
async function callWithClient(service: PublicService, method: DescMethod, init: unknown, requested: Route, role: Role): Promise<Outcome> {
  let message;
  try {
    message = create(method.input, init as never);
    toBinary(method.input, message);
  } catch {
    return { kind: 'not sent' };
  }
  let route = requested;
  if (route.protocol === 'connect' && !route.binary) {
    try {
      toJsonString(method.input, message);
    } catch {
      route = { ...route, binary: true };
    }
  }
  const client = createClient(service.descriptor, transportFor(service, route, role)) as unknown as Record<
    string,
    (request: unknown, options: { signal: AbortSignal }) => Promise<unknown> | AsyncIterable<unknown>
  >;
  const controller = new AbortController();
  const streaming = method.methodKind !== 'unary';
  // Real time: a timeout race, the bound on an answer.
  const timer = setTimeout(() => controller.abort(), streaming ? STREAM_PATIENCE_MS : UNARY_PATIENCE_MS);
  try {
    // A bidirectional method (the worker session) takes a stream of requests: this one, held open until the answer.
    const input = method.methodKind === 'bidi_streaming' ? oneRequest(message, controller.signal) : message;
    const call = client[method.localName]!(input, { signal: controller.signal });
    if (streaming) {
      // The first frame (or the error) is the answer; leaving the loop cancels the stream. A worker
      // session's answer may be a call's error: it is judged like a call's.
      for await (const frame of call as AsyncIterable<{ result?: { case?: string; value?: unknown } }>) {
        if (frame.result?.case === 'error') return { kind: 'failed', failure: seenInStatus(frame.result.value as Status) };
        break;
      }
    } else {
      // A batch answer's items are judged like calls: the first failed item stands for the answer.
      const failedItem = (await call as { results?: { result: { case?: string; value?: unknown } }[] }).results?.find((item) => item.result.case === 'error');
      if (failedItem) return { kind: 'failed', failure: seenInStatus(failedItem.result.value as Status) };
    }
    return { kind: 'ok' };
  } catch (error) {
    if (controller.signal.aborted) return { kind: 'gave up' };
    if (!(error instanceof ConnectError)) throw error;
    return { kind: 'failed', failure: seenByConnect(error) };
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

/** A request stream of one message that stays open until `signal` aborts, as a worker session's first call. */
async function* oneRequest(message: unknown, signal: AbortSignal): AsyncGenerator<unknown> {
  yield message;
  await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
}

/* ---------- (b) bodies that are not a request, by hand ---------- */

type Compression = 'none' | 'gzip' | 'br' | 'gzip-lie';

interface RawRequest {
  readonly protocol: Protocol;
  readonly encoding: 'binary' | 'json';
  readonly body: Uint8Array;
  readonly compression: Compression;
  /** For enveloped protocols: announce this many bytes more than are sent, then end the stream. */
  readonly missing: number;
  readonly role: Role;
}

function envelope(bytes: Uint8Array, flags: number, missing: number): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(bytes.byteLength + missing, 1);
  return Buffer.concat([head, bytes]);
}

function compress(body: Uint8Array, compression: Compression): Uint8Array {
  switch (compression) {
    case 'gzip':
      return gzipSync(body);
    case 'br':
      return brotliCompressSync(body);
    case 'none':
    case 'gzip-lie':
      return body;
  }
}

/** Splits complete length-prefixed frames off the front of `body`. */
function frames(body: Buffer): { flags: number; data: Buffer }[] {
  const found: { flags: number; data: Buffer }[] = [];
  let offset = 0;
  while (offset + 5 <= body.length) {
    const length = body.readUInt32BE(offset + 1);
    if (offset + 5 + length > body.length) break;
    found.push({ flags: body.readUInt8(offset), data: body.subarray(offset + 5, offset + 5 + length) });
    offset += 5 + length;
  }
  return found;
}

/**
 * Sends `request` to the method's path over HTTP/2 the way a client that
 * does not use Connect would, and decodes the answer with Connect's own
 * protocol helpers into the failure any client would see. A stream is
 * answered by its first message or its error, then cancelled.
 */
async function rawCall(service: PublicService, method: DescMethod, request: RawRequest): Promise<Outcome> {
  const streaming = method.methodKind !== 'unary';
  const encoding = request.compression === 'gzip-lie' ? 'gzip' : request.compression;
  const compressed = compress(request.body, request.compression);
  const flags = request.compression === 'none' ? 0 : 1;
  const sub = request.encoding === 'binary' ? 'proto' : 'json';
  const headers: http2.OutgoingHttpHeaders = {
    ':method': 'POST',
    ':path': `/${service.descriptor.typeName}/${method.name}`,
    authorization: `Bearer ${tokens.get(request.role)!}`,
  };
  let body: Buffer;
  switch (request.protocol) {
    case 'connect':
      headers['connect-protocol-version'] = '1';
      headers['connect-timeout-ms'] = String(RAW_DEADLINE_MS);
      if (streaming) {
        headers['content-type'] = `application/connect+${sub}`;
        if (encoding !== 'none') headers['connect-content-encoding'] = encoding;
        body = envelope(compressed, flags, request.missing);
      } else {
        headers['content-type'] = `application/${sub}`;
        if (encoding !== 'none') headers['content-encoding'] = encoding;
        body = Buffer.from(compressed);
      }
      break;
    case 'grpc':
    case 'grpc-web':
      headers['content-type'] = `application/${request.protocol}+${sub}`;
      if (request.protocol === 'grpc') headers['te'] = 'trailers';
      headers['grpc-timeout'] = `${RAW_DEADLINE_MS}m`;
      if (encoding !== 'none') headers['grpc-encoding'] = encoding;
      body = envelope(compressed, flags, request.missing);
      break;
  }
  const session = http2.connect(service.server().url);
  session.on('error', () => {});
  try {
    const stream = session.request(headers);
    stream.on('error', () => {});
    const answer = await new Promise<{ head: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders; body: Buffer } | 'first frame' | 'gave up'>(
      (resolve) => {
        let head: http2.IncomingHttpHeaders = {};
        let trailers: http2.IncomingHttpHeaders = {};
        const chunks: Buffer[] = [];
        // Real time: a timeout race, the bound on an answer.
        const timer = setTimeout(() => resolve('gave up'), streaming ? STREAM_PATIENCE_MS : UNARY_PATIENCE_MS);
        stream.on('response', (h) => (head = h));
        stream.on('trailers', (t) => (trailers = t));
        stream.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          if (!streaming || Number(head[':status']) !== 200) return;
          const [first] = frames(Buffer.concat(chunks));
          // A message frame (not a gRPC-Web trailer 0x80, not a Connect end-stream 0x02) answers the call.
          if (first && (first.flags & 0x82) === 0) {
            clearTimeout(timer);
            resolve('first frame');
          }
        });
        stream.on('close', () => {
          clearTimeout(timer);
          resolve({ head, trailers, body: Buffer.concat(chunks) });
        });
        stream.end(body);
      },
    );
    stream.close(http2.constants.NGHTTP2_CANCEL);
    if (answer === 'gave up') {
      if (!streaming) throw new Error(`no answer ${UNARY_PATIENCE_MS} ms after sending, though the request's deadline was ${RAW_DEADLINE_MS} ms`);
      return { kind: 'gave up' };
    }
    if (answer === 'first frame') return { kind: 'ok' };
    return decodeAnswer(request.protocol, streaming, answer.head, answer.trailers, answer.body);
  } finally {
    session.destroy();
  }
}

function decodeAnswer(protocol: Protocol, streaming: boolean, head: http2.IncomingHttpHeaders, trailers: http2.IncomingHttpHeaders, raw: Buffer): Outcome {
  const status = Number(head[':status']);
  if (Number.isNaN(status)) throw new Error('the stream closed without a response');
  const body = head['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
  let error: ConnectError | undefined;
  switch (protocol) {
    case 'connect':
      if (!streaming) {
        if (status === 200) return { kind: 'ok' };
        error = errorFromJsonBytes(body, undefined, new ConnectError(`undecodable error body (HTTP ${status})`, Code.Unknown));
      } else {
        if (status !== 200) {
          error = errorFromJsonBytes(body, undefined, new ConnectError(`undecodable error body (HTTP ${status})`, Code.Unknown));
          break;
        }
        const end = frames(body).find((frame) => frame.flags & 0x02);
        if (!end) throw new Error('a Connect stream ended without an end-stream message');
        error = endStreamFromJson(end.data).error;
      }
      break;
    case 'grpc':
      error = findTrailerError(receivedHeaders(trailers)) ?? findTrailerError(receivedHeaders(head));
      break;
    case 'grpc-web': {
      const trailer = frames(body).find((frame) => frame.flags & 0x80);
      error = (trailer ? findTrailerError(trailerParse(trailer.data)) : undefined) ?? findTrailerError(receivedHeaders(head));
      break;
    }
  }
  return error ? { kind: 'failed', failure: seenByConnect(error) } : { kind: 'ok' };
}

function describeRaw(method: DescMethod, request: RawRequest): string {
  return `${method.name} ${JSON.stringify({ ...request, body: Buffer.from(request.body).toString('hex') })}`;
}

/** Random text as JSON: structured JSON of any shape, JSON cut short, and plain strings. */
const jsonTextArb: fc.Arbitrary<Uint8Array> = fc
  .oneof(
    fc.json({ maxDepth: 4 }),
    fc.json({ maxDepth: 3 }).chain((text) => fc.nat({ max: Math.max(0, text.length - 1) }).map((cut) => text.slice(0, cut))),
    fc.string({ unit: 'binary', maxLength: 60 }),
    fc.constantFrom('{', '{"a":', '[]', 'null', '{"__proto__": {"x": 1}}', `{"k": ${'['.repeat(5_000)}`, '\u0000'),
  )
  .map((text) => new Uint8Array(Buffer.from(text, 'utf8')));
const bytesArb: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.uint8Array({ maxLength: 128 }),
  // A valid-looking tag followed by a length prefix past the end, or a varint that never ends.
  fc.constantFrom(Uint8Array.from([0x0a, 0x7f, 0x61]), Uint8Array.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), Uint8Array.from([0x0a, 0x02, 0xc3, 0x28])),
  // Nested length-delimited fields 150 levels deep (past the decoder's recursion limit).
  fc.constant(
    (() => {
      let inner = new Uint8Array(0);
      for (let i = 0; i < 150; i += 1) inner = Uint8Array.from([0x0a, ...varint(inner.length), ...inner]);
      return inner;
    })(),
  ),
);

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

const rawRequestArb = (roles: readonly Role[]): fc.Arbitrary<RawRequest> =>
  fc
    .record({
      protocol: fc.constantFrom<Protocol>('grpc', 'grpc-web', 'connect'),
      encoding: fc.constantFrom<'binary' | 'json'>('binary', 'json'),
      compression: fc.constantFrom<Compression>('none', 'gzip', 'br', 'gzip-lie'),
      missing: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 1_000 }) }),
      role: fc.constantFrom(...roles),
    })
    .chain((shape) => (shape.encoding === 'binary' ? bytesArb : jsonTextArb).map((body) => ({ ...shape, body })));

/* ---------- the properties ---------- */

/**
 * fast-check's report, with long runs of one character (the huge strings)
 * abbreviated so that a counterexample stays readable.
 */
function reportShortly<Ts>(details: fc.RunDetails<Ts>): void {
  if (!details.failed) return;
  const abbreviate = (text: string) => text.replace(/(.)\1{199,}/gs, (run: string, c: string) => `${c.repeat(8)}…(${run.length}×)`);
  const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  throw new Error(abbreviate(`${cause.slice(0, 2_000)}\n${fc.defaultReportMessage(details) ?? 'property failed'}`));
}

function checkHealth(service: PublicService): void {
  for (const each of SERVICES) {
    expect(exits.get(each.descriptor.typeName), `${each.descriptor.typeName} exited`).toBeUndefined();
  }
  const pid = service.server().process.pid;
  if (pid === undefined) throw new Error(`${service.descriptor.typeName} has no pid`);
  expect(residentBytes(pid), `${service.descriptor.typeName} resident set`).toBeLessThan(RSS_BOUND);
}

const routeArb: fc.Arbitrary<Route> = fc.oneof(
  fc.record({ protocol: fc.constant<Protocol>('grpc'), binary: fc.constant(true), gzip: fc.boolean() }),
  fc.record({ protocol: fc.constant<Protocol>('grpc-web'), binary: fc.constant(true), gzip: fc.boolean() }),
  fc.record({ protocol: fc.constant<Protocol>('connect'), binary: fc.constant(false), gzip: fc.boolean() }),
);

describe.each(SERVICES.map((service) => [service.descriptor.typeName, service] as const))('%s', (_name, service) => {
  it('has methods to fuzz', () => {
    expect(service.descriptor.methods.length).toBeGreaterThan(0);
  });

  for (const method of service.descriptor.methods) {
    const seed = SEED ^ [...`${service.descriptor.typeName}/${method.name}`].reduce((h, c) => (h * 31 + c.charCodeAt(0)) | 0, 0);

    it(`${method.name}: well-shaped requests are never INTERNAL, UNKNOWN or DATA_LOSS and always carry ErrorInfo`, async () => {
      await fc.assert(
        fc.asyncProperty(messageArb(method.input), routeArb, fc.constantFrom(...service.roles), async (init, route, role) => {
          const outcome = await callWithClient(service, method, init, route, role);
          judge(outcome, () => `${method.name} over ${route.protocol}${route.gzip ? '+gzip' : ''} as ${role}`);
        }),
        { seed, numRuns: WELL_SHAPED_RUNS, endOnFailure: true, reporter: reportShortly },
      );
      checkHealth(service);
    }, 120_000);

    it(`${method.name}: bodies that are not a request are never INTERNAL, UNKNOWN or DATA_LOSS and always carry ErrorInfo`, async () => {
      await fc.assert(
        fc.asyncProperty(rawRequestArb(service.roles), async (request) => {
          const outcome = await rawCall(service, method, request).catch((error: unknown) => {
            throw new Error(`${error instanceof Error ? error.message : String(error)} for ${describeRaw(method, request)}`);
          });
          judge(outcome, () => describeRaw(method, request));
        }),
        { seed, numRuns: GARBAGE_RUNS, endOnFailure: true, reporter: reportShortly },
      );
      checkHealth(service);
    }, 120_000);
  }
});

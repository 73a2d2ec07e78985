import { readFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import { gzipSync } from 'node:zlib';
import { create, toBinary, toJsonString } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { errorFromJsonBytes } from '@connectrpc/connect/protocol-connect';
import { findTrailerError } from '@connectrpc/connect/protocol-grpc';
import { trailerParse } from '@connectrpc/connect/protocol-grpc-web';
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receivedHeaders } from '@docket/client-kit/node';
import { AdmissionService, ListJobsRequestSchema, SubmitJobRequestSchema } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { clientFor, failureOf, seenByConnect, settle, type Protocol, type SeenFailure } from '../support/clients.js';
import { startCluster, type DocketCluster } from '../support/cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { jsonValueOf } from '../support/json-arbitrary.js';
import { startClusterWithSql, stopClustersWithSql } from '../support/cluster-with-sql.js';
import { newIdempotencyKey } from '../support/keys.js';
import { admissionFootprint } from '../support/sql.js';

/*
 * Bounded inputs (SPEC section 9, issue 11 item 2), on real processes: what
 * a request may cost before anyone looked at it, and that every client
 * mistake is INVALID_ARGUMENT with ErrorInfo, never INTERNAL, with nothing
 * written.
 */

const MIB = 1024 * 1024;
const SUBMIT_PATH = '/docket.admission.v1.AdmissionService/SubmitJob';

let cluster: DocketCluster;
let sql: pg.Client;
let alice: string;

beforeAll(async () => {
  ({ cluster, sql } = await startClusterWithSql(startCluster, { databaseUrl: await createMigratedTestDatabase('bounded inputs') }));
  alice = await cluster.tokenFor('alice', 'user');
});

afterAll(stopClustersWithSql);

/** The resident set of a process, in bytes, from /proc. */
function residentBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? Number.NaN) * 1024;
}

function admissionPid(): number {
  const pid = cluster.admission.process.pid;
  if (pid === undefined) throw new Error('admission has no pid');
  return pid;
}

/** A gRPC / gRPC-Web length-prefixed message (flag 1 = compressed). */
function envelope(bytes: Uint8Array, flags = 0): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(bytes.byteLength, 1);
  return Buffer.concat([head, bytes]);
}

type Encoding = 'binary' | 'json';

interface RawRequest {
  readonly protocol: Protocol;
  readonly encoding: Encoding;
  /** The message as sent (already compressed when `compression` is set). */
  readonly message: Uint8Array | AsyncIterable<Uint8Array>;
  readonly compression?: 'gzip';
  readonly token?: string;
}

/**
 * Sends one hand-made SubmitJob request over HTTP/2, the way a client that
 * does not use Connect (or a hostile one) would, and decodes the answer with
 * Connect's own protocol helpers into the failure any client would see.
 */
async function rawSubmit(request: RawRequest): Promise<SeenFailure | 'ok'> {
  const session = http2.connect(cluster.admission.url);
  session.on('error', () => {});
  try {
    const sub = request.encoding === 'binary' ? 'proto' : 'json';
    const headers: http2.OutgoingHttpHeaders = { ':method': 'POST', ':path': SUBMIT_PATH };
    if (request.token) headers['authorization'] = `Bearer ${request.token}`;
    switch (request.protocol) {
      case 'connect':
        headers['content-type'] = `application/${sub}`;
        headers['connect-protocol-version'] = '1';
        if (request.compression) headers['content-encoding'] = request.compression;
        break;
      case 'grpc':
        headers['content-type'] = `application/grpc+${sub}`;
        headers['te'] = 'trailers';
        if (request.compression) headers['grpc-encoding'] = request.compression;
        break;
      case 'grpc-web':
        headers['content-type'] = `application/grpc-web+${sub}`;
        if (request.compression) headers['grpc-encoding'] = request.compression;
        break;
    }
    const stream = session.request(headers);
    stream.on('error', () => {});
    const answer = new Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      let head: http2.IncomingHttpHeaders = {};
      let trailers: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      stream.on('response', (h) => (head = h));
      stream.on('trailers', (t) => (trailers = t));
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      // The answer may come before the body is sent in full: it is complete
      // once its side of the stream ends, whatever became of ours.
      const done = () => (head[':status'] === undefined ? reject(new Error('no answer')) : resolve({ headers: head, trailers, body: Buffer.concat(chunks) }));
      stream.on('end', done);
      stream.on('close', done);
    });
    const framed = request.protocol === 'connect' ? (b: Uint8Array) => b : (b: Uint8Array) => envelope(b, request.compression ? 1 : 0);
    if (request.message instanceof Uint8Array) {
      stream.end(framed(request.message));
    } else {
      // A streamed body: the frame header is not sent, so only the Connect
      // protocol (whose unary body is the message) is meaningful here.
      void (async () => {
        for await (const chunk of request.message as AsyncIterable<Uint8Array>) {
          if (stream.destroyed || stream.closed || !stream.writable) return;
          if (!stream.write(chunk)) await new Promise((r) => { stream.once('drain', r); stream.once('close', r); });
        }
        if (!stream.destroyed) stream.end();
      })().catch(() => {});
    }
    const { headers: head, trailers, body } = await answer;
    return decodeAnswer(request.protocol, head, trailers, body);
  } finally {
    session.destroy();
  }
}

function decodeAnswer(protocol: Protocol, head: http2.IncomingHttpHeaders, trailers: http2.IncomingHttpHeaders, body: Buffer): SeenFailure | 'ok' {
  let error: ConnectError | undefined;
  switch (protocol) {
    case 'connect':
      if (Number(head[':status']) === 200) return 'ok';
      error = errorFromJsonBytes(body, undefined, new ConnectError('undecodable error body', Code.Unknown));
      break;
    case 'grpc':
      error = findTrailerError(receivedHeaders(trailers)) ?? findTrailerError(receivedHeaders(head));
      break;
    case 'grpc-web': {
      let offset = 0;
      while (offset + 5 <= body.length) {
        const flags = body.readUInt8(offset);
        const length = body.readUInt32BE(offset + 1);
        if (flags & 0x80) error = findTrailerError(trailerParse(body.subarray(offset + 5, offset + 5 + length)));
        offset += 5 + length;
      }
      error ??= findTrailerError(receivedHeaders(head));
      break;
    }
  }
  return error ? seenByConnect(error) : 'ok';
}

async function* zeros(total: number, chunk = MIB): AsyncIterable<Uint8Array> {
  const block = new Uint8Array(chunk).fill(0x41);
  for (let sent = 0; sent < total; sent += chunk) yield block;
}

describe('what a request may cost before it is read', () => {
  it('refuses a 60 MB unauthenticated Connect body after reading no more than the limit', async () => {
    const pid = admissionPid();
    const before = residentBytes(pid);
    const seen = await rawSubmit({ protocol: 'connect', encoding: 'binary', message: zeros(60 * MIB) });
    const grown = residentBytes(pid) - before;
    // Reading the whole body costs at least its 60 MB; the limit is 2 MiB.
    expect(grown).toBeLessThan(24 * MIB);
    expect(seen).toMatchObject({
      code: Code.InvalidArgument,
      reason: 'LIMIT_EXCEEDED',
      domain: 'docket',
      metadata: { limit: 'admissionRequestBytes', max: String(2 * MIB) },
    });
  });

  it('refuses a gzip bomb (100 MB of zeros in 100 KB) on Connect and gRPC, without inflating it', async () => {
    const bomb = gzipSync(Buffer.alloc(100 * MIB));
    expect(bomb.byteLength).toBeLessThan(MIB);
    const pid = admissionPid();
    const before = residentBytes(pid);
    for (const protocol of ['connect', 'grpc'] as Protocol[]) {
      const seen = await rawSubmit({ protocol, encoding: 'binary', message: bomb, compression: 'gzip', token: alice });
      expect(seen, protocol).toMatchObject({ code: Code.InvalidArgument, reason: 'LIMIT_EXCEEDED', metadata: { limit: 'admissionRequestBytes' } });
    }
    expect(residentBytes(pid) - before).toBeLessThan(48 * MIB);
  });

  it('announces bounded HTTP/2 settings: concurrent streams and header list size', async () => {
    const session = http2.connect(cluster.admission.url);
    session.on('error', () => {});
    try {
      const settings = await new Promise<http2.Settings>((resolve) => session.once('remoteSettings', resolve));
      expect(settings.maxConcurrentStreams).toBe(1_000);
      expect(settings.maxHeaderListSize).toBe(65_536);
    } finally {
      session.destroy();
    }
  });

  it('still accepts a small gzip-compressed request', async () => {
    const message = toBinary(SubmitJobRequestSchema, create(SubmitJobRequestSchema, { idempotencyKey: newIdempotencyKey('gzip'), queue: 'gzip' }));
    expect(await rawSubmit({ protocol: 'connect', encoding: 'binary', message: gzipSync(message), compression: 'gzip', token: alice })).toBe('ok');
  });
});

describe('bodies that are not a request', () => {
  const bodies: Record<string, { encoding: Encoding; message: Uint8Array }> = {
    'a malformed binary body': { encoding: 'binary', message: Uint8Array.from([0xff, 0xff, 0xff, 0xff]) },
    'a truncated binary body': { encoding: 'binary', message: Uint8Array.from([0x12, 0x40, 0x61]) },
    'invalid UTF-8 in a binary string': { encoding: 'binary', message: Uint8Array.from([0x12, 0x02, 0xc3, 0x28]) },
    'a malformed JSON body': { encoding: 'json', message: Buffer.from('{"queue": ') },
    'JSON of the wrong shape': { encoding: 'json', message: Buffer.from('{"queue": {"x": 1}}') },
    // JSON.parse reports it quoting half of the surrogate pair, which Connect could not put in grpc-message.
    'JSON that starts with an astral character': { encoding: 'json', message: Buffer.from('\u{30a50}') },
  };
  for (const [label, body] of Object.entries(bodies)) {
    it(`answers ${label} with INVALID_ARGUMENT and ErrorInfo, alike on gRPC, gRPC-Web and Connect`, async () => {
      const before = await admissionFootprint(sql);
      const seen: Record<string, SeenFailure | 'ok'> = {};
      for (const protocol of ['grpc', 'grpc-web', 'connect'] as Protocol[]) {
        seen[protocol] = await rawSubmit({ protocol, ...body, token: alice });
      }
      expect(seen['grpc']).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD', domain: 'docket' });
      expect(seen['grpc-web']).toEqual(seen['grpc']);
      expect(seen['connect']).toEqual(seen['grpc']);
      expect(await admissionFootprint(sql)).toEqual(before);
    });
  }
});

describe('client mistakes inside a well-formed request', () => {
  const admission = () => clientFor(AdmissionService, cluster.admission.url, alice);
  const submit = (overrides: Record<string, unknown>) =>
    admission().submitJob({ idempotencyKey: newIdempotencyKey('mistake'), queue: 'mistakes', ...overrides });

  const mistakes: Record<string, { call: () => Promise<unknown>; field: string }> = {
    'a NUL in ListJobs filter.queue': { call: () => admission().listJobs({ filter: { queue: 'a\u0000b' } }), field: 'filter.queue' },
    'a NUL in the label': { call: () => submit({ label: 'a\u0000b' }), field: 'label' },
    'NaN in an input Struct': { call: () => submit({ input: { n: Number.NaN } }), field: 'input' },
    'Infinity nested in an input Struct': { call: () => submit({ input: { deep: [{ n: Number.POSITIVE_INFINITY }] } }), field: 'input' },
    'an input Struct nested 40 levels deep': {
      call: () => {
        let value: unknown = 1;
        for (let i = 0; i < 40; i += 1) value = [value];
        return submit({ input: { deep: value } });
      },
      field: 'input',
    },
    'run_after beyond year 9999': { call: () => submit({ runAfter: { seconds: 253_402_300_800n, nanos: 0 } }), field: 'run_after' },
    'run_after with negative nanos': { call: () => submit({ runAfter: { seconds: 1_800_000_000n, nanos: -1 } }), field: 'run_after' },
    'a backoff Duration with mixed signs': {
      call: () => submit({ retryPolicy: { initialBackoff: { seconds: 1n, nanos: -500_000_000 } } }),
      field: 'retry_policy.initial_backoff',
    },
    'a queue name longer than any string field allows': { call: () => admission().listJobs({ filter: { queue: 'q'.repeat(20_000) } }), field: 'filter.queue' },
  };
  for (const [label, mistake] of Object.entries(mistakes)) {
    it(`answers ${label} with INVALID_ARGUMENT naming the field, and writes nothing`, async () => {
      const before = await admissionFootprint(sql);
      const failure = await failureOf(mistake.call());
      expect(failure).toMatchObject({ code: Code.InvalidArgument, domain: 'docket' });
      expect(['INVALID_FIELD', 'LIMIT_EXCEEDED']).toContain(failure.reason);
      expect(failure.violations.map((v) => v.field)).toContain(mistake.field);
      expect(await admissionFootprint(sql)).toEqual(before);
    });
  }

  it('answers a NUL in a progress or failure message with INVALID_ARGUMENT, and the job and its journal stay as they were', async () => {
    const queue = `nul-${Date.now().toString(36)}`;
    const submitted = await admission().submitJob({ idempotencyKey: newIdempotencyKey('nul-worker'), queue });
    const jobId = submitted.job!.id;
    const worker = clientFor(ExecutionService, cluster.execution.url, await cluster.tokenFor('nul-worker', 'worker', [queue]));
    const { workerIncarnation } = await worker.registerWorker({ workerName: `nul-${queue}`, queues: [queue], maxConcurrency: 1 });
    let assignment;
    for (let i = 0; i < 10 && !assignment; i += 1) {
      [assignment] = (await worker.claimJobs({ workerIncarnation, queues: [queue], maxJobs: 1, wait: durationFromMs(2_000), operationId: `op_${crypto.randomUUID().replaceAll('-', '')}` })).assignments;
    }
    const authority = assignment!.authority!;
    const attempt = { attemptId: authority.attemptId, fence: authority.fence, workerIncarnation: authority.workerIncarnation };
    const stored = async () =>
      (
        await sql.query(
          'select status, revision, progress, failure, updated_at, (select count(*) from job_events where job_id = $1) as events from jobs where id = $1',
          [jobId],
        )
      ).rows[0] as { status: string };
    const before = await stored();

    const progress = await failureOf(worker.reportProgress({ attempt, operationId: `op_${crypto.randomUUID().replaceAll('-', '')}`, progress: { completedUnits: 1n, message: 'half\u0000way' } }));
    expect(progress).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD' });
    expect(progress.violations.map((v) => v.field)).toContain('progress.message');

    const failure = await failureOf(
      worker.reportOutcome({
        attempt,
        operationId: `op_${crypto.randomUUID().replaceAll('-', '')}`,
        outcome: { case: 'failure', value: { failureClass: FailureClass.INVALID_INPUT, message: 'broke\u0000here' } },
      }),
    );
    expect(failure).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD' });
    expect(failure.violations.map((v) => v.field)).toContain('failure.message');

    const after = await stored();
    expect(after).toEqual(before);
    expect(after.status).toBe('RUNNING');
  });
});

describe('listing large jobs', () => {
  it('returns fewer jobs per page when they are large, and every job exactly once across the pages', async () => {
    const owner = await cluster.tokenFor('big-lister', 'user');
    const client = clientFor(AdmissionService, cluster.admission.url, owner);
    const big = 'x'.repeat(250 * 1024);
    const submitted: string[] = [];
    for (let i = 0; i < 24; i += 1) {
      const { job } = await client.submitJob({ idempotencyKey: newIdempotencyKey(`big-${i}`), queue: 'big', input: { big } });
      submitted.push(job!.id);
    }
    const pages: string[][] = [];
    let pageToken = '';
    do {
      const page = await client.listJobs({ pageSize: 200, pageToken });
      pages.push(page.jobs.map((job) => job.id));
      pageToken = page.nextPageToken;
    } while (pageToken !== '' && pages.length < 10);
    // 24 jobs of 250 KiB are 6 MiB: more than one page's 4 MiB budget.
    expect(pages.length).toBeGreaterThan(1);
    for (const page of pages) expect(page.length).toBeGreaterThan(0);
    expect(pages.flat().sort()).toEqual([...submitted].sort());
  });
});

describe('garbage in the request space', () => {
  // Strings with NUL, controls, lone surrogates and astral characters.
  const garbageString = fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('', '\u0000', 'a\u0000', '\ud800', 'default', 'q'.repeat(200)));
  const garbageNumber = fc.oneof(fc.double(), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0, 1e308));
  const garbageJson = jsonValueOf(garbageString, garbageNumber);
  const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
  const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
  const timestamp = fc.record({ seconds: int64, nanos: int32 });

  it('never answers SubmitJob or ListJobs with INTERNAL or UNKNOWN, whatever the fields hold', async () => {
    // Each field is well-shaped or garbage, so that garbage in one field
    // also meets requests whose other fields pass validation.
    const either = <T, U>(valid: fc.Arbitrary<T>, garbage: fc.Arbitrary<U>) => fc.oneof(valid, garbage);
    const submitRequest = fc.record(
      {
        idempotencyKey: either(fc.uuid().map((id) => `fuzz-${id}`), garbageString),
        queue: either(fc.constant('fuzz'), garbageString),
        label: either(fc.constant('a label'), garbageString),
        priority: int32,
        input: fc.dictionary(garbageString, garbageJson, { maxKeys: 5 }),
        runAfter: either(fc.record({ seconds: fc.bigInt({ min: 0n, max: 4_000_000_000n }), nanos: fc.integer({ min: 0, max: 999_999_999 }) }), timestamp),
        retryPolicy: fc.record(
          {
            maxAttempts: either(fc.integer({ min: 0, max: 10 }), int32),
            initialBackoff: either(fc.constant(durationFromMs(10)), timestamp),
            maxBackoff: either(fc.constant(durationFromMs(1000)), timestamp),
          },
          { requiredKeys: [] },
        ),
        lostAttemptPolicy: either(fc.integer({ min: 0, max: 2 }), int32),
      },
      { requiredKeys: [] },
    );
    const listRequest = fc.record(
      {
        pageSize: either(fc.integer({ min: 0, max: 300 }), int32),
        pageToken: garbageString,
        filter: fc.record(
          { queue: either(fc.constant('fuzz'), garbageString), statuses: fc.array(either(fc.integer({ min: 1, max: 12 }), int32), { maxLength: 3 }), includeDeleted: fc.boolean() },
          { requiredKeys: [] },
        ),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(submitRequest.map((r) => ({ rpc: 'submit' as const, r })), listRequest.map((r) => ({ rpc: 'list' as const, r }))), fc.constantFrom<Protocol>('grpc', 'connect'), async (call, protocol) => {
        const target = clientFor(AdmissionService, cluster.admission.url, alice, protocol);
        const schema = call.rpc === 'submit' ? SubmitJobRequestSchema : ListJobsRequestSchema;
        if (protocol === 'connect') {
          // The Connect transport sends JSON, which cannot carry NaN or a
          // timestamp out of range: such a request never leaves the client.
          try {
            toJsonString(schema, create(schema, call.r as never));
          } catch {
            return;
          }
        }
        const outcome = await settle<unknown>(call.rpc === 'submit' ? target.submitJob(call.r as never) : target.listJobs(call.r as never));
        if (!outcome.ok) {
          expect([Code.Internal, Code.Unknown], JSON.stringify(outcome.failure)).not.toContain(outcome.failure.code);
          expect(outcome.failure.domain).toBe('docket');
        }
      }),
      { numRuns: 300 },
    );
  });
});

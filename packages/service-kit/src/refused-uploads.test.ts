import * as http from 'node:http';
import * as http2 from 'node:http2';
import { Code, ConnectError, createClient, type Interceptor, type Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { LIMITS } from '@docket/contracts';
import { afterEach, describe, expect, it } from 'vitest';
import { errorInfoOf } from './error-mapping.js';
import { ProbeService } from './testing/probe-service.js';
import { startProbeServer, type ProbeHarness } from './testing/probe-server.js';

/**
 * A client whose requests are refused for size keeps a usable HTTP/2
 * session. The server used to answer such a request and leave its stream
 * open, paused, with the client waiting to send the rest of the body; each
 * refusal cost the client's session the unsent body until it refused every
 * new stream with ENHANCE_YOUR_CALM (the soak fuzz of the public RPCs hit
 * it after about 85 refusals of 3 MiB strings with a 256 MB session).
 *
 * The client's session here allows 256 MB, as the fuzz's does, so 120
 * refusals of a 3 MiB request are well past what it could survive if the
 * server left the bodies unread. (The server drains a refused body at
 * flow-control pace, so the rest of it is still in flight on the client
 * while the next request goes out: a client that sends oversized requests
 * back to back needs room for a few of them in its session.)
 */

const MIB = 1024 * 1024;
const CLIENT_SESSION_MEMORY_MB = 256;
const REFUSALS = 120;
const OVERSIZED = 'q'.repeat(3 * MIB);
const LIMIT = LIMITS.admissionRequestBytes;

const harnesses: ProbeHarness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.server.shutdown(500)));
});
async function probeServer(): Promise<ProbeHarness> {
  const harness = await startProbeServer({}, 'info');
  harnesses.push(harness);
  return harness;
}

function bearer(token: string): Interceptor[] {
  return [
    (next) => (request) => {
      request.header.set('authorization', `Bearer ${token}`);
      return next(request);
    },
  ];
}

const transports: Record<string, (baseUrl: string, token: string) => Transport> = {
  'gRPC-Web': (baseUrl, token) =>
    createGrpcWebTransport({ baseUrl, httpVersion: '2', nodeOptions: { maxSessionMemory: CLIENT_SESSION_MEMORY_MB }, interceptors: bearer(token) }),
  gRPC: (baseUrl, token) =>
    createGrpcTransport({ baseUrl, nodeOptions: { maxSessionMemory: CLIENT_SESSION_MEMORY_MB }, interceptors: bearer(token) }),
  'Connect binary': (baseUrl, token) =>
    createConnectTransport({ baseUrl, httpVersion: '2', useBinaryFormat: true, nodeOptions: { maxSessionMemory: CLIENT_SESSION_MEMORY_MB }, interceptors: bearer(token) }),
};

describe('requests refused before their body was read', () => {
  for (const [protocol, transportFor] of Object.entries(transports)) {
    it(`leave a ${protocol} client's session usable: ${REFUSALS} oversized requests on one session, then a normal call`, async () => {
      const harness = await probeServer();
      // One transport is one HTTP/2 session (Connect's session manager keeps one per transport).
      const client = createClient(ProbeService, transportFor(harness.url, await harness.token('user', { subject: 'alice' })));
      for (let i = 0; i < REFUSALS; i++) {
        const error = await client.echo({ text: OVERSIZED }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error, `refusal ${i}`).toBeInstanceOf(ConnectError);
        const refused = error as ConnectError;
        expect([Code.InvalidArgument, Code.ResourceExhausted], `refusal ${i}: ${refused.message}`).toContain(refused.code);
        expect(errorInfoOf(refused), `refusal ${i}: ${refused.message}`).toMatchObject({
          domain: 'docket',
          reason: 'LIMIT_EXCEEDED',
          metadata: { limit: 'admissionRequestBytes', max: String(LIMIT) },
        });
      }
      expect(await client.echo({ text: 'who' })).toMatchObject({ text: 'alice/user' });
    }, 60_000);
  }

  it('over HTTP/1.1 keep-alive close their connection, so the next call on the same client is answered at once', async () => {
    const harness = await probeServer();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const client = createClient(
        ProbeService,
        createConnectTransport({ baseUrl: harness.url, httpVersion: '1.1', nodeOptions: { agent }, interceptors: bearer(await harness.token('user', { subject: 'alice' })) }),
      );
      for (let i = 0; i < 3; i++) {
        const error = await client.echo({ text: OVERSIZED }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error instanceof ConnectError && errorInfoOf(error)?.reason, `refusal ${i}`).toBe('LIMIT_EXCEEDED');
        // Without the close, the next call waits behind the unread body until its deadline.
        expect(await client.echo({ text: 'who' }, { timeoutMs: 5_000 })).toMatchObject({ text: 'alice/user' });
      }
    } finally {
      agent.destroy();
    }
  }, 60_000);

  it('are drained and closed, on one raw HTTP/2 session, which then carries a normal call', async () => {
    const harness = await probeServer();
    const token = await harness.token('user', { subject: 'alice' });
    const session = http2.connect(harness.url, { maxSessionMemory: CLIENT_SESSION_MEMORY_MB });
    try {
      const call = (text: string) => grpcWebEcho(session, token, text);
      for (let i = 0; i < REFUSALS; i++) {
        const answer = await call(OVERSIZED);
        // The whole answer arrived and the stream then closed without error:
        // the server read the rest of the body (or reset it with NO_ERROR).
        expect(answer.rstCode, `refusal ${i}`).toBe(http2.constants.NGHTTP2_NO_ERROR);
        expect(answer.trailer, `refusal ${i}`).toMatch(/grpc-status: 3\r\n/);
      }
      const ok = await call('who');
      expect(ok.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
      expect(ok.trailer).toMatch(/grpc-status: 0\r\n/);
      expect(ok.message.toString('latin1')).toContain('alice/user');
    } finally {
      session.destroy();
    }
  }, 60_000);
});

/** How long a hand-made call's stream may stay open (a refused one closes about a second after its body stops coming). */
const STREAM_PATIENCE_MS = 5_000;

/** A unary gRPC-Web Echo written by hand on `session`, waiting for its stream to close. */
function grpcWebEcho(session: http2.ClientHttp2Session, token: string, text: string) {
  const textBytes = Buffer.from(text, 'utf8');
  // ProbeRequest.text is field 1, a string: tag 0x0a, varint length, bytes.
  const length: number[] = [];
  for (let n = textBytes.length; ; n >>>= 7) {
    if (n < 0x80) {
      length.push(n);
      break;
    }
    length.push((n & 0x7f) | 0x80);
  }
  const message = Buffer.concat([Buffer.from([0x0a, ...length]), textBytes]);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  const stream = session.request({
    ':method': 'POST',
    ':path': '/docket.testing.v1.ProbeService/Echo',
    'content-type': 'application/grpc-web+proto',
    authorization: `Bearer ${token}`,
  });
  return new Promise<{ rstCode: number; message: Buffer; trailer: string }>((resolve, reject) => {
    // Real time: a timeout race, the bound on the stream's close.
    const stuck = setTimeout(() => reject(new Error(`stream ${stream.id} still open after ${STREAM_PATIENCE_MS} ms`)), STREAM_PATIENCE_MS);
    stream.once('close', () => clearTimeout(stuck));
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', reject);
    stream.on('close', () => {
      const body = Buffer.concat(chunks);
      let messageFrame = Buffer.alloc(0);
      let trailer = '';
      for (let offset = 0; offset + 5 <= body.length; ) {
        const size = body.readUInt32BE(offset + 1);
        const data = body.subarray(offset + 5, offset + 5 + size);
        if ((body[offset] ?? 0) & 0x80) trailer = data.toString('latin1');
        else messageFrame = data;
        offset += 5 + size;
      }
      resolve({ rstCode: stream.rstCode ?? -1, message: messageFrame, trailer });
    });
    stream.end(Buffer.concat([prefix, message]));
  });
}

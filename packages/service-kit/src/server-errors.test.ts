import { Code, ConnectError, createClient, type Transport } from '@connectrpc/connect';
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from '@connectrpc/connect-node';
import type { ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorInfoOf, fieldViolationsOf } from './error-mapping.js';
import { createLogger } from './logger.js';
import { startServer } from './server.js';
import { grpcJsProbe, seenByGrpcJs, type SeenFailure } from './testing/grpc-js-probe.js';
import { ProbeService } from './testing/probe-service.js';
import {
  PROBE_VIOLATIONS,
  SECRET_BUG_MESSAGE,
  startProbeServer,
  type ProbeHarness,
} from './testing/probe-server.js';

let harness: ProbeHarness;
let token: string;
beforeAll(async () => {
  harness = await startProbeServer();
  token = await harness.token('user');
});
afterAll(async () => {
  await harness.server.shutdown(1_000);
});

function seenByConnect(error: unknown): SeenFailure {
  if (!(error instanceof ConnectError)) throw new Error(`expected a ConnectError, got ${String(error)}`);
  const info = errorInfoOf(error);
  return {
    code: error.code,
    message: error.rawMessage,
    ...(info ? { reason: info.reason, domain: info.domain, metadata: { ...info.metadata } } : {}),
    violations: fieldViolationsOf(error).map((v) => ({ ...v, reason: v.reason ?? '' })),
  };
}

const connectTransports: Record<string, () => Transport> = {
  grpc: () => createGrpcTransport({ baseUrl: harness.url }),
  'grpc-web': () => createGrpcWebTransport({ baseUrl: harness.url, httpVersion: '2' }),
  connect: () => createConnectTransport({ baseUrl: harness.url, httpVersion: '2' }),
  'connect over HTTP/1.1': () => createConnectTransport({ baseUrl: harness.url, httpVersion: '1.1' }),
};

/** The same unary failure as seen by grpc-js and by each Connect transport. */
async function failureEverywhere(text: string, headers: Record<string, string>): Promise<Record<string, SeenFailure>> {
  const seen: Record<string, SeenFailure> = {};
  const grpcJs = grpcJsProbe(harness.url);
  try {
    const error = await grpcJs.echo(text, headers).catch((e: unknown) => e);
    seen['grpc-js'] = seenByGrpcJs(error as ServiceError);
  } finally {
    grpcJs.close();
  }
  for (const [name, transport] of Object.entries(connectTransports)) {
    const client = createClient(ProbeService, transport());
    seen[name] = seenByConnect(await client.echo({ text }, { headers }).catch((e: unknown) => e));
  }
  return seen;
}

describe('errors on the wire', () => {
  it('delivers a DocketError with the same code, message, ErrorInfo and field violations to every protocol', async () => {
    const seen = await failureEverywhere('docket-error', { authorization: `Bearer ${token}` });
    const expected: SeenFailure = {
      code: Code.InvalidArgument,
      message: 'invalid request',
      reason: 'INVALID_FIELD',
      domain: 'docket',
      metadata: { checked: 'queue,label' },
      violations: PROBE_VIOLATIONS.map((v) => ({ reason: '', ...v })),
    };
    expect(Object.keys(seen)).toHaveLength(5);
    for (const [client, failure] of Object.entries(seen)) expect(failure, client).toEqual(expected);
  });

  it('turns an unexpected Error into INTERNAL "internal error" everywhere and logs only its name', async () => {
    const seen = await failureEverywhere('bug', { authorization: `Bearer ${token}` });
    for (const [client, failure] of Object.entries(seen)) {
      expect(failure, client).toEqual({
        code: Code.Internal,
        message: 'internal error',
        reason: 'INTERNAL',
        domain: 'docket',
        metadata: {},
        violations: [],
      });
    }
    const log = harness.lines.join('\n');
    expect(log).not.toContain('sekrit');
    expect(log).not.toContain(SECRET_BUG_MESSAGE.slice(0, 20));
    const unexpected = harness.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === 'unexpected error');
    expect(unexpected.length).toBeGreaterThanOrEqual(5);
    expect(unexpected[0]).toMatchObject({ level: 'error', error_name: 'Error', rpc: '/docket.testing.v1.ProbeService/Echo' });
  });

  it('answers an unimplemented method with UNIMPLEMENTED and reason UNIMPLEMENTED, after authentication', async () => {
    const client = createClient(ProbeService, createGrpcTransport({ baseUrl: harness.url }));
    const authenticated = seenByConnect(
      await client.unbuilt({}, { headers: { authorization: `Bearer ${token}` } }).catch((e: unknown) => e),
    );
    expect(authenticated).toMatchObject({ code: Code.Unimplemented, reason: 'UNIMPLEMENTED', message: 'unimplemented' });
    const anonymous = seenByConnect(await client.unbuilt({}).catch((e: unknown) => e));
    expect(anonymous).toMatchObject({ code: Code.Unauthenticated, reason: 'UNAUTHENTICATED' });
  });

  it('maps errors a server-streaming handler throws mid-stream, after messages were sent', async () => {
    for (const transport of Object.values(connectTransports).slice(0, 3)) {
      const client = createClient(ProbeService, transport());
      const received: number[] = [];
      const error = await (async () => {
        for await (const reply of client.count({ text: 'fail-mid', count: 3 }, { headers: { authorization: `Bearer ${token}` } })) {
          received.push(reply.sequence);
        }
      })().catch((e: unknown) => e);
      expect(received).toEqual([1]);
      expect(seenByConnect(error)).toMatchObject({ code: Code.NotFound, reason: 'NOT_FOUND', message: 'job not found' });

      const bug = await (async () => {
        for await (const _ of client.count({ text: 'bug-mid', count: 3 }, { headers: { authorization: `Bearer ${token}` } })) {
          // drain
        }
      })().catch((e: unknown) => e);
      expect(seenByConnect(bug)).toMatchObject({ code: Code.Internal, reason: 'INTERNAL', message: 'internal error' });
    }
  });

  it('answers a service this server does not serve with UNIMPLEMENTED and ErrorInfo on every protocol', async () => {
    const bare = await startServer({
      name: 'bare',
      listen: { host: '127.0.0.1', port: 0 },
      services: [],
      routes: () => {},
      authenticate: { secret: 's'.repeat(40), allowedRoles: ['user'] },
      logger: createLogger('bare', () => {}),
    });
    try {
      const expected = { code: Code.Unimplemented, message: 'unimplemented', reason: 'UNIMPLEMENTED', domain: 'docket' };
      const grpcJs = grpcJsProbe(bare.url);
      const error = await grpcJs.echo('x').catch((e: unknown) => e);
      grpcJs.close();
      expect(seenByGrpcJs(error as ServiceError)).toMatchObject(expected);
      for (const transport of [
        createGrpcTransport({ baseUrl: bare.url }),
        createGrpcWebTransport({ baseUrl: bare.url, httpVersion: '2' }),
        createConnectTransport({ baseUrl: bare.url, httpVersion: '1.1' }),
      ]) {
        const client = createClient(ProbeService, transport);
        expect(seenByConnect(await client.echo({ text: 'x' }).catch((e: unknown) => e))).toMatchObject(expected);
      }
    } finally {
      await bare.shutdown(100);
    }
  });
});

import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { mintToken } from '@docket/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorInfoOf } from './error-mapping.js';
import { ProbeService } from './testing/probe-service.js';
import { startProbeServer, type ProbeHarness } from './testing/probe-server.js';

let harness: ProbeHarness;
let probe: ReturnType<typeof createClient<typeof ProbeService>>;
beforeAll(async () => {
  harness = await startProbeServer({ authenticate: { secret: 'x'.repeat(40), allowedRoles: ['worker'] } });
  probe = createClient(ProbeService, createGrpcTransport({ baseUrl: harness.url }));
});
afterAll(async () => {
  await harness.server.shutdown(1_000);
});

async function refusal(authorization: string | undefined) {
  const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
  const error = await probe.echo({ text: 'who' }, { headers }).catch((e: unknown) => e);
  if (!(error instanceof ConnectError)) throw new Error('expected the call to fail');
  return { code: error.code, message: error.rawMessage, reason: errorInfoOf(error)?.reason };
}

const UNAUTHENTICATED = { code: Code.Unauthenticated, message: 'unauthenticated', reason: 'UNAUTHENTICATED' };

describe('bearer authentication', () => {
  const secret = 'x'.repeat(40);

  it('puts the verified principal in the handler context', async () => {
    const token = await mintToken({ secret, subject: 'w-1', role: 'worker', ttlSeconds: 600 });
    const reply = await probe.echo({ text: 'who' }, { headers: { authorization: `Bearer ${token}` } });
    expect(reply.text).toBe('w-1/worker');
  });

  it('refuses a missing, malformed, forged or expired token with a bare UNAUTHENTICATED', async () => {
    expect(await refusal(undefined)).toEqual(UNAUTHENTICATED);
    expect(await refusal('Basic d29ya2VyOnB3')).toEqual(UNAUTHENTICATED);
    const forged = await mintToken({ secret: 'y'.repeat(40), subject: 'w-1', role: 'worker', ttlSeconds: 600 });
    expect(await refusal(`Bearer ${forged}`)).toEqual(UNAUTHENTICATED);
    const expired = await mintToken({ secret, subject: 'w-1', role: 'worker', ttlSeconds: -60 });
    expect(await refusal(`Bearer ${expired}`)).toEqual(UNAUTHENTICATED);
  });

  it('refuses a valid token of a role the service does not allow with a bare PERMISSION_DENIED', async () => {
    const user = await mintToken({ secret, subject: 'alice', role: 'user', ttlSeconds: 600 });
    expect(await refusal(`Bearer ${user}`)).toEqual({
      code: Code.PermissionDenied,
      message: 'permission denied',
      reason: 'PERMISSION_DENIED',
    });
  });

  it('decides before the router reveals whether a method exists', async () => {
    const error = await probe.unbuilt({ text: '' }).catch((e: unknown) => e);
    expect(ConnectError.from(error).code).toBe(Code.Unauthenticated);
  });

  it('never logs the token', async () => {
    const token = await mintToken({ secret, subject: 'w-1', role: 'worker', ttlSeconds: 600 });
    await probe.echo({ text: 'who' }, { headers: { authorization: `Bearer ${token}` } });
    expect(harness.lines.join('\n')).not.toContain(token.split('.')[2]);
  });
});

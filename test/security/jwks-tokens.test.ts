import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Code } from '@connectrpc/connect';
import { SignJWT, exportJWK, exportSPKI } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '@docket/auth';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { clientFor, failureOf } from '../support/clients.js';
import { startService, stopAll } from '../support/cluster.js';
import type { DocketServices } from '../support/docket-services.js';
import { startInProcessCluster, stopInProcessClusters } from '../support/in-process-cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { newIssuerKey, type IssuerKey } from '../support/issuer-key.js';
import { newIdempotencyKey } from '../support/keys.js';

/*
 * An external issuer (SPEC section 9): admission, execution and events
 * verify EdDSA and RS256 tokens against the JSON Web Key Set file that
 * DOCKET_AUTH_JWKS_FILE names, beside HS256 tokens signed with
 * DOCKET_AUTH_SECRET, under the same rules (here an audience and an
 * issuer) and the same role checks. Forgeries get the bare
 * UNAUTHENTICATED that a missing token gets.
 */

const AUDIENCE = 'docket-jwks-test';
const ISSUER = 'https://issuer.jwks-test.example';

let cluster: DocketServices;
let dir: string;
let ed25519: IssuerKey;
let rsa: IssuerKey;
let stranger: IssuerKey;

beforeAll(async () => {
  [ed25519, rsa, stranger] = await Promise.all([newIssuerKey('EdDSA', 'issuer-ed'), newIssuerKey('RS256', 'issuer-rsa'), newIssuerKey('EdDSA', 'stranger')]);
  dir = await mkdtemp(join(tmpdir(), 'docket-jwks-'));
  const jwksFile = join(dir, 'jwks.json');
  await writeFile(jwksFile, JSON.stringify({ keys: [ed25519.publicJwk, rsa.publicJwk] }));
  const publicAuth = { DOCKET_AUTH_JWKS_FILE: jwksFile, DOCKET_AUTH_AUDIENCE: AUDIENCE, DOCKET_AUTH_ISSUER: ISSUER };
  cluster = await startInProcessCluster({
    databaseUrl: await createMigratedTestDatabase('jwks tokens'),
    env: { admission: publicAuth, execution: { ...publicAuth, DOCKET_BACKGROUND_LOOPS: 'off' }, events: publicAuth },
  });
});

afterAll(async () => {
  await stopAll();
  await stopInProcessClusters();
  await rm(dir, { recursive: true, force: true });
});

/** A token the external issuer signs with `key` (claims and header overridable, to forge). */
function issued(key: IssuerKey, claims: Record<string, unknown>, header: Record<string, unknown> = {}, ttlSeconds = 600): Promise<string> {
  return new SignJWT({ aud: AUDIENCE, iss: ISSUER, ...claims })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT', ...header })
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .sign(key.privateKey);
}

describe('tokens from the JWKS file', () => {
  it('let a user submit and read jobs with an EdDSA or an RS256 token; the HS256 secret still works beside them', async () => {
    const edToken = await issued(ed25519, { sub: 'jwks-alice', role: 'user' });
    const rsaToken = await issued(rsa, { sub: 'jwks-alice', role: 'user' });
    const hsToken = await mintToken({ secret: cluster.secret, subject: 'jwks-alice', role: 'user', ttlSeconds: 600, audience: AUDIENCE, issuer: ISSUER });
    const asEd = clientFor(AdmissionService, cluster.admission.url, edToken);
    const asRsa = clientFor(AdmissionService, cluster.admission.url, rsaToken);
    const submitted = await asEd.submitJob({ idempotencyKey: newIdempotencyKey('jwks-ed'), queue: 'jwks-reports', input: { month: '2026-11' } });
    const viaRsa = await asRsa.submitJob({ idempotencyKey: newIdempotencyKey('jwks-rsa'), queue: 'jwks-reports', input: { month: '2026-12' } });
    const edJobId = submitted.job!.id;
    // One subject, whichever key vouches for it: each token reads both jobs.
    for (const token of [edToken, rsaToken, hsToken]) {
      const admission = clientFor(AdmissionService, cluster.admission.url, token);
      expect((await admission.getJob({ jobId: edJobId })).job?.id).toBe(edJobId);
      expect((await admission.getJob({ jobId: viaRsa.job!.id })).job?.id).toBe(viaRsa.job!.id);
    }
    const events = await clientFor(EventService, cluster.events.url, edToken).readJobEvents({ jobId: edJobId });
    expect(events.events.length).toBeGreaterThan(0);
    // Another subject's EdDSA token does not see the job.
    const bob = clientFor(AdmissionService, cluster.admission.url, await issued(ed25519, { sub: 'jwks-bob', role: 'user' }));
    expect(await failureOf(bob.getJob({ jobId: edJobId }))).toMatchObject({ code: Code.NotFound });
  });

  it('let a worker register on execution with an EdDSA token, within the queues it grants', async () => {
    const token = await issued(ed25519, { sub: 'jwks-worker', role: 'worker', queues: ['jwks-emails'] });
    const execution = clientFor(ExecutionService, cluster.execution.url, token);
    const registered = await execution.registerWorker({ workerName: 'jwks-worker-1', queues: ['jwks-emails'], maxConcurrency: 1 });
    expect(registered.workerIncarnation).not.toBe('');
    expect(await failureOf(execution.registerWorker({ workerName: 'jwks-worker-2', queues: ['jwks-payroll'], maxConcurrency: 1 }))).toMatchObject({
      code: Code.PermissionDenied,
      reason: 'PERMISSION_DENIED',
    });
  });

  it('keep the role checks: a user token is PERMISSION_DENIED on execution, a worker token on admission', async () => {
    const user = await issued(rsa, { sub: 'jwks-alice', role: 'user' });
    const worker = await issued(ed25519, { sub: 'jwks-worker', role: 'worker' });
    const denied = { code: Code.PermissionDenied, reason: 'PERMISSION_DENIED', message: 'permission denied' };
    expect(
      await failureOf(clientFor(ExecutionService, cluster.execution.url, user).registerWorker({ workerName: 'u', queues: ['q'], maxConcurrency: 1 })),
    ).toMatchObject(denied);
    expect(await failureOf(clientFor(AdmissionService, cluster.admission.url, worker).getJob({ jobId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa' }))).toMatchObject(
      denied,
    );
  });

  it('refuse forged, confused, expired and misaddressed tokens exactly as a missing one, on every public service', async () => {
    const claims = { sub: 'jwks-alice', role: 'user' };
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const forgeries: Record<string, string> = {
      'signed by a key not in the set, under the kid of a key in it': await issued(stranger, claims, { kid: ed25519.kid }),
      'signed by a key not in the set, under its own kid': await issued(stranger, claims),
      'EdDSA under the kid of the RSA key': await issued(ed25519, claims, { kid: rsa.kid }),
      'HS256 keyed with the RSA public key PEM': await new SignJWT({ ...claims, aud: AUDIENCE, iss: ISSUER })
        .setProtectedHeader({ alg: 'HS256', kid: rsa.kid })
        .setExpirationTime('10m')
        .sign(new TextEncoder().encode(await exportSPKI(rsa.publicKey))),
      'alg none': `${part({ alg: 'none', kid: ed25519.kid })}.${part({ ...claims, aud: AUDIENCE, iss: ISSUER, exp: Math.floor(Date.now() / 1000) + 600 })}.AAAA`,
      expired: await issued(ed25519, claims, {}, -120),
      'wrong audience': await issued(rsa, { ...claims, aud: 'someone-else' }),
      'wrong issuer': await issued(ed25519, { ...claims, iss: 'https://evil.example' }),
    };
    const calls = {
      admission: (token?: string) => clientFor(AdmissionService, cluster.admission.url, token).getJob({ jobId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa' }),
      events: (token?: string) => clientFor(EventService, cluster.events.url, token).readJobEvents({ jobId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa' }),
      execution: (token?: string) =>
        clientFor(ExecutionService, cluster.execution.url, token).registerWorker({ workerName: 'forged', queues: ['jwks-emails'], maxConcurrency: 1 }),
    };
    for (const [service, call] of Object.entries(calls)) {
      const none = await failureOf(call(undefined));
      expect(none).toMatchObject({ code: Code.Unauthenticated, reason: 'UNAUTHENTICATED', message: 'unauthenticated' });
      for (const [what, token] of Object.entries(forgeries)) {
        expect([service, what, await failureOf(call(token))]).toEqual([service, what, none]);
      }
    }
  });
});

describe('DOCKET_AUTH_JWKS_FILE at start-up', () => {
  it('is enough without DOCKET_AUTH_SECRET: such an admission accepts the issuer tokens and no HS256 token', async () => {
    const admission = await startService('admission', {
      DOCKET_AUTH_JWKS_FILE: join(dir, 'jwks.json'),
      DOCKET_SERVICE_AUTH_SECRET: cluster.serviceAuthSecret,
      DOCKET_CURSOR_SECRET: cluster.cursorSecret,
      DOCKET_STATE_URL: cluster.state.url,
    });
    try {
      const edToken = await issued(ed25519, { sub: 'jwks-only', role: 'user', aud: undefined, iss: undefined });
      const submitted = await clientFor(AdmissionService, admission.url, edToken).submitJob({
        idempotencyKey: newIdempotencyKey('jwks-only'),
        queue: 'jwks-reports',
        input: {},
      });
      expect(submitted.job?.id).toMatch(/^job_/);
      const hsToken = await mintToken({ secret: cluster.secret, subject: 'jwks-only', role: 'user', ttlSeconds: 600 });
      expect(await failureOf(clientFor(AdmissionService, admission.url, hsToken).getJob({ jobId: submitted.job!.id }))).toMatchObject({
        code: Code.Unauthenticated,
        reason: 'UNAUTHENTICATED',
      });
    } finally {
      await admission.stop();
    }
  });

  it('stops a service whose key set holds a private key, naming the variable and showing none of the file', async () => {
    const privateJwk = { ...(await exportJWK(ed25519.privateKey)), kid: ed25519.kid };
    const file = join(dir, 'private-jwks.json');
    await writeFile(file, JSON.stringify({ keys: [privateJwk] }));
    const started = startService('admission', {
      DOCKET_AUTH_JWKS_FILE: file,
      DOCKET_SERVICE_AUTH_SECRET: cluster.serviceAuthSecret,
      DOCKET_CURSOR_SECRET: cluster.cursorSecret,
      DOCKET_STATE_URL: cluster.state.url,
    });
    const refusal = await started.then(
      () => undefined,
      (error: unknown) => String(error),
    );
    expect(refusal).toContain('DOCKET_AUTH_JWKS_FILE cannot be used: the key set key 1 holds private or symmetric key material');
    expect(refusal).not.toContain(privateJwk.d);
    expect(refusal).not.toContain(privateJwk.x);
  });
});

import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT } from 'jose';
import { mintToken } from '@docket/auth';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { clientFor, failureOf, grpcJsUnary, seenByGrpcJs, type Protocol, type SeenFailure } from './support/clients.js';
import type { DocketServices } from './support/docket-services.js';
import { startInProcessCluster, stopInProcessClusters } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { newIdempotencyKey } from './support/keys.js';

let cluster: DocketServices;
let alice: string;
let bob: string;
let alicesJobId: string;

beforeAll(async () => {
  // One second of clock tolerance, so that the expiry test waits seconds, not the default half minute.
  const tolerance = { DOCKET_AUTH_CLOCK_TOLERANCE_SECONDS: '1' };
  cluster = await startInProcessCluster({ databaseUrl: await createMigratedTestDatabase('access control'), env: { admission: tolerance, events: tolerance } });
  alice = await cluster.tokenFor('alice', 'user');
  bob = await cluster.tokenFor('bob', 'user');
  const submitted = await clientFor(AdmissionService, cluster.admission.url, alice).submitJob({
    idempotencyKey: newIdempotencyKey('alice'),
    queue: 'reports',
    input: { month: '2026-11' },
  });
  alicesJobId = submitted.job!.id;
});

afterAll(stopInProcessClusters);

const MISSING_JOB_ID = 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa';

describe('who may see what', () => {
  it("answers another user's job exactly like a missing one, on every protocol", async () => {
    for (const protocol of ['grpc', 'grpc-web', 'connect'] as Protocol[]) {
      const asBob = clientFor(AdmissionService, cluster.admission.url, bob, protocol);
      const foreign = await failureOf(asBob.getJob({ jobId: alicesJobId }));
      const missing = await failureOf(asBob.getJob({ jobId: MISSING_JOB_ID }));
      expect(foreign).toEqual(missing);
      expect(foreign).toMatchObject({ code: Code.NotFound, reason: 'NOT_FOUND', domain: 'docket' });
    }
    const viaGrpcJs = async (jobId: string) =>
      seenByGrpcJs(await grpcJsUnary(cluster.admission.url, AdmissionService.method.getJob, { jobId }, bob).catch((e: unknown) => e));
    expect(await viaGrpcJs(alicesJobId)).toEqual(await viaGrpcJs(MISSING_JOB_ID));
  });

  it("shows the owner and admins the job, and leaves it out of other users' listings", async () => {
    const asAlice = await clientFor(AdmissionService, cluster.admission.url, alice).getJob({ jobId: alicesJobId });
    expect(asAlice.job?.owner).toBe('alice');
    const admin = await cluster.tokenFor('root', 'admin');
    const asAdmin = await clientFor(AdmissionService, cluster.admission.url, admin).getJob({ jobId: alicesJobId });
    expect(asAdmin.job?.id).toBe(alicesJobId);
    const bobsList = await clientFor(AdmissionService, cluster.admission.url, bob).listJobs({});
    expect(bobsList.jobs.map((job) => job.id)).not.toContain(alicesJobId);
  });

  it('refuses a call without a token, or with a forged, expired, exp-less, future-issued, service-role or alg-none one, as UNAUTHENTICATED, hinting at nothing', async () => {
    const forged = `${alice.slice(0, -4)}AAAA`;
    // Signed with the cluster's secret, but its exp passed a minute ago.
    const expired = await mintToken({ secret: cluster.secret, subject: 'alice', role: 'user', ttlSeconds: -60 });
    const key = new TextEncoder().encode(cluster.secret);
    const now = Math.floor(Date.now() / 1000);
    const withoutExp = await new SignJWT({ role: 'user' }).setProtectedHeader({ alg: 'HS256' }).setSubject('alice').setIssuedAt().sign(key);
    const issuedLater = await new SignJWT({ role: 'user' }).setProtectedHeader({ alg: 'HS256' }).setSubject('alice').setIssuedAt(now + 600).setExpirationTime(now + 3600).sign(key);
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const algNone = `${part({ alg: 'none', typ: 'JWT' })}.${part({ sub: 'alice', role: 'admin', exp: now + 3600 })}.`;
    // A service token is signed with the state service's own secret: the public services do not know it.
    const serviceRole = cluster.serviceToken;
    const refusals = [];
    for (const token of [undefined, forged, 'not-a-jwt', expired, withoutExp, issuedLater, algNone, serviceRole]) {
      refusals.push(await failureOf(clientFor(AdmissionService, cluster.admission.url, token).getJob({ jobId: alicesJobId })));
    }
    expect(refusals[0]).toMatchObject({ code: Code.Unauthenticated, reason: 'UNAUTHENTICATED', violations: [] });
    // Every refusal is the same answer: nothing says which check failed.
    for (const refusal of refusals) expect(refusal).toEqual(refusals[0]);
  });

  it('refuses a token once its exp has passed, though it accepted it a moment before', async () => {
    const shortLived = await mintToken({ secret: cluster.secret, subject: 'alice', role: 'user', ttlSeconds: 2 });
    const asAlice = clientFor(AdmissionService, cluster.admission.url, shortLived);
    expect((await asAlice.getJob({ jobId: alicesJobId })).job?.id).toBe(alicesJobId);
    const { exp } = JSON.parse(Buffer.from(shortLived.split('.')[1]!, 'base64url').toString()) as { exp: number };
    // Past exp and the one second of tolerance.
    // Real time: the token really has to expire (2 s, short but safely accepted by the first call).
    await new Promise((resolve) => setTimeout(resolve, exp * 1000 + 1_000 - Date.now() + 50));
    const refusal = await failureOf(asAlice.getJob({ jobId: alicesJobId }));
    expect(refusal).toEqual(await failureOf(clientFor(AdmissionService, cluster.admission.url).getJob({ jobId: alicesJobId })));
    expect(refusal).toMatchObject({ code: Code.Unauthenticated, reason: 'UNAUTHENTICATED', violations: [] });
  });

  it('refuses a worker token on admission as PERMISSION_DENIED, hinting at nothing', async () => {
    const worker = await cluster.tokenFor('worker-1', 'worker');
    const asWorker = clientFor(AdmissionService, cluster.admission.url, worker);
    const existing = await failureOf(asWorker.getJob({ jobId: alicesJobId }));
    const missing = await failureOf(asWorker.getJob({ jobId: MISSING_JOB_ID }));
    expect(existing).toMatchObject({ code: Code.PermissionDenied, reason: 'PERMISSION_DENIED' });
    expect(existing).toEqual(missing);
    const submit = await failureOf(asWorker.submitJob({ idempotencyKey: newIdempotencyKey(), queue: 'email' }));
    expect(submit).toEqual(existing);
  });
});

describe('one failure, three protocols', () => {
  it('delivers the same code, reason and field violations to grpc-js, Connect and gRPC-Web clients', async () => {
    const request = { idempotencyKey: 'short', queue: 'Bad Queue!', label: 'x'.repeat(300), input: {} };
    const seen: Record<string, SeenFailure> = {};
    seen['grpc-js'] = seenByGrpcJs(
      await grpcJsUnary(cluster.admission.url, AdmissionService.method.submitJob, request, alice).catch((e: unknown) => e),
    );
    for (const protocol of ['grpc', 'grpc-web', 'connect'] as Protocol[]) {
      seen[protocol] = await failureOf(clientFor(AdmissionService, cluster.admission.url, alice, protocol).submitJob(request));
    }
    const reference = seen['grpc-js'];
    expect(reference).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD', domain: 'docket' });
    expect(reference?.violations.map((v) => v.field)).toEqual(['idempotency_key']);
    for (const [client, failure] of Object.entries(seen)) expect(failure, client).toEqual(reference);
  });

  it('delivers an error raised by the state service through admission unchanged on every protocol', async () => {
    const key = newIdempotencyKey('conflict');
    await clientFor(AdmissionService, cluster.admission.url, alice).submitJob({ idempotencyKey: key, queue: 'email' });
    const changed = { idempotencyKey: key, queue: 'sms' };
    const seen: SeenFailure[] = [
      seenByGrpcJs(await grpcJsUnary(cluster.admission.url, AdmissionService.method.submitJob, changed, alice).catch((e: unknown) => e)),
    ];
    for (const protocol of ['grpc', 'grpc-web', 'connect'] as Protocol[]) {
      seen.push(await failureOf(clientFor(AdmissionService, cluster.admission.url, alice, protocol).submitJob(changed)));
    }
    for (const failure of seen) expect(failure).toEqual(seen[0]);
    expect(seen[0]).toMatchObject({ code: Code.AlreadyExists, reason: 'IDEMPOTENCY_CONFLICT' });
  });

  it('answers an RPC the service does not serve with UNIMPLEMENTED', async () => {
    // Every RPC of the contract is built; another service's RPC sent to admission is not served there.
    const failure = await failureOf(
      clientFor(ExecutionService, cluster.admission.url, alice).registerWorker({ workerName: 'w', queues: ['q'], maxConcurrency: 1 }),
    );
    expect(failure.code).toBe(Code.Unimplemented);
  });
});

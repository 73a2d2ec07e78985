import { toBinary } from '@bufbuild/protobuf';
import { Code } from '@connectrpc/connect';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { AdmissionService, type SubmitJobRequestSchema } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobSchema } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { clientFor, failureOf } from './support/clients.js';
import { startCluster, type DocketCluster } from './support/cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startClusterWithSql, stopClustersWithSql } from './support/cluster-with-sql.js';
import { newIdempotencyKey } from './support/keys.js';
import { admissionFootprint, storedJob } from './support/sql.js';

let cluster: DocketCluster;
let sql: pg.Client;
let alice: string;

beforeAll(async () => {
  ({ cluster, sql } = await startClusterWithSql(startCluster, { databaseUrl: await createMigratedTestDatabase('admission idempotency') }));
  alice = await cluster.tokenFor('alice', 'user');
});

afterAll(stopClustersWithSql);

const admissionAs = (token: string) => clientFor(AdmissionService, cluster.admission.url, token);

type SubmitInit = Exclude<MessageInitShape<typeof SubmitJobRequestSchema>, { $typeName: string }>;

function submission(overrides: Partial<SubmitInit> = {}): SubmitInit {
  return {
    idempotencyKey: newIdempotencyKey('submit'),
    queue: 'email',
    input: { to: 'ada@example.com', attempt: 1, tags: ['welcome'] },
    label: 'welcome mail',
    priority: 3,
    ...overrides,
  };
}

describe('SubmitJob idempotency', () => {
  it('admits a QUEUED job with its own id, revision 1 and journal sequence 1', async () => {
    const response = await admissionAs(alice).submitJob(submission());
    expect(response.replayed).toBe(false);
    expect(response.job?.id).toMatch(/^job_[a-z2-7]{26}$/);
    expect(response.job).toMatchObject({ owner: 'alice', queue: 'email', status: JobStatus.QUEUED, revision: 1n, latestSequence: 1n });
    const expiresInMs = Number(response.idempotencyExpiresAt!.seconds) * 1000 - Date.now();
    expect(expiresInMs).toBeGreaterThan(23.9 * 3_600_000);
  });

  it('replays the original response verbatim after the state and admission processes restart', async () => {
    const request = submission();
    const first = await admissionAs(alice).submitJob(request);

    await cluster.state.restart();
    await cluster.admission.restart();

    const replay = await admissionAs(alice).submitJob(request);
    expect(replay.replayed).toBe(true);
    expect(replay.job?.id).toBe(first.job?.id);
    expect(toBinary(JobSchema, replay.job!)).toEqual(toBinary(JobSchema, first.job!));
    expect(replay.idempotencyExpiresAt).toEqual(first.idempotencyExpiresAt);
    const stored = await storedJob(sql, first.job!.id);
    expect(stored.events).toHaveLength(1);
  });

  it('refuses a changed request under the same key with IDEMPOTENCY_CONFLICT and changes nothing', async () => {
    const request = submission();
    const first = await admissionAs(alice).submitJob(request);
    const before = await storedJob(sql, first.job!.id);
    const footprint = await admissionFootprint(sql);

    for (const changed of [
      { ...request, input: { to: 'eve@example.com', attempt: 1, tags: ['welcome'] } },
      { ...request, priority: 4 },
      { ...request, queue: 'sms' },
    ]) {
      const failure = await failureOf(admissionAs(alice).submitJob(changed));
      expect(failure).toMatchObject({ code: Code.AlreadyExists, reason: 'IDEMPOTENCY_CONFLICT', domain: 'docket' });
    }

    expect(await storedJob(sql, first.job!.id)).toEqual(before);
    expect(await admissionFootprint(sql)).toEqual(footprint);
    const replay = await admissionAs(alice).submitJob(request);
    expect(replay.replayed).toBe(true);
  });

  it('scopes keys by subject: the same key for another user admits another job', async () => {
    const request = submission();
    const forAlice = await admissionAs(alice).submitJob(request);
    const forBob = await admissionAs(await cluster.tokenFor('bob', 'user')).submitJob(request);
    expect(forBob.replayed).toBe(false);
    expect(forBob.job?.id).not.toBe(forAlice.job?.id);
  });
});

describe('input boundaries', () => {
  const badKeys: Record<string, string> = {
    '15 characters': 'a'.repeat(15),
    '129 characters': 'a'.repeat(129),
    'a space': 'abcdefgh ijklmnop',
    'a control character': 'abcdefgh\u0007ijklmnop',
    'a tab': 'abcdefgh\tijklmnop',
    'non-ASCII': 'abcdefgh\u00e9ijklmnop',
    'an emoji': 'abcdefgh\u{1F600}ijklmnop',
    'empty': '',
  };

  for (const [what, key] of Object.entries(badKeys)) {
    it(`refuses an idempotency key with ${what} as INVALID_ARGUMENT with a field violation, writing nothing`, async () => {
      const footprint = await admissionFootprint(sql);
      const failure = await failureOf(admissionAs(alice).submitJob(submission({ idempotencyKey: key })));
      expect(failure.code).toBe(Code.InvalidArgument);
      expect(failure.reason).toBe('INVALID_FIELD');
      expect(failure.violations.map((v) => v.field)).toEqual(['idempotency_key']);
      expect(JSON.stringify(failure)).not.toContain(key || '\u0000');
      expect(await admissionFootprint(sql)).toEqual(footprint);
    });
  }

  it('accepts keys of exactly 16 and 128 characters from the whole alphabet', async () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-';
    for (const key of [alphabet.slice(0, 16), (alphabet + alphabet).slice(0, 128)]) {
      const response = await admissionAs(alice).submitJob(submission({ idempotencyKey: key }));
      expect(response.replayed).toBe(false);
    }
  });

  const badDigests: Record<string, string> = {
    uppercase: 'A'.repeat(64),
    'mixed case': `${'a'.repeat(32)}${'B'.repeat(32)}`,
    '63 characters': 'a'.repeat(63),
    '65 characters': 'a'.repeat(65),
    'non-hex': `${'a'.repeat(63)}g`,
    empty: '',
  };

  for (const [what, digest] of Object.entries(badDigests)) {
    it(`the state service's typed API refuses a ${what} request digest, writing nothing`, async () => {
      const state = clientFor(StateService, cluster.state.url, cluster.serviceToken);
      const footprint = await admissionFootprint(sql);
      const failure = await failureOf(
        state.admitJob({
          caller: { subject: 'alice' },
          operation: 'docket.admission.v1.AdmissionService/SubmitJob',
          idempotencyKey: newIdempotencyKey('digest'),
          requestDigest: digest,
          idempotencyTtl: { seconds: 86_400n },
          spec: { queue: 'email', input: {}, retryPolicy: { maxAttempts: 5, initialBackoff: { seconds: 1n }, maxBackoff: { seconds: 60n } } },
        }),
      );
      expect(failure).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD' });
      expect(failure.violations.map((v) => v.field)).toEqual(['request_digest']);
      expect(await admissionFootprint(sql)).toEqual(footprint);
    });
  }

  it('reports every invalid job field at once', async () => {
    const failure = await failureOf(
      admissionAs(alice).submitJob(
        submission({ queue: 'Not A Queue', label: 'x'.repeat(257), retryPolicy: { maxAttempts: 1000 } }),
      ),
    );
    expect(failure.code).toBe(Code.InvalidArgument);
    expect(failure.violations.map((v) => v.field)).toEqual(['queue', 'label', 'retry_policy.max_attempts']);
  });

  it('refuses an input over 256 KiB as LIMIT_EXCEEDED, writing nothing', async () => {
    const footprint = await admissionFootprint(sql);
    const failure = await failureOf(admissionAs(alice).submitJob(submission({ input: { blob: 'x'.repeat(262_144) } })));
    expect(failure).toMatchObject({ code: Code.InvalidArgument, reason: 'LIMIT_EXCEEDED', metadata: { limit: 'jobInputBytes', max: '262144' } });
    expect(await admissionFootprint(sql)).toEqual(footprint);
  });

  it('refuses the state service to callers with a public token, whatever their role (its own secret signs service tokens)', async () => {
    const asUser = clientFor(StateService, cluster.state.url, alice);
    const failure = await failureOf(asUser.getJob({ caller: { subject: 'alice' }, jobId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa' }));
    expect(failure).toMatchObject({ code: Code.Unauthenticated, reason: 'UNAUTHENTICATED' });
  });
});

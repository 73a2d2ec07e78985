import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { clientFor, failureOf } from './support/clients.js';
import { startCluster, stopAll, type DocketCluster } from './support/cluster.js';
import { createTestDatabase } from './support/database.js';
import { newIdempotencyKey } from './support/keys.js';

let cluster: DocketCluster;
let alice: string;
let bob: string;
const existing = new Set<string>();

/** Submits `count` jobs for `token`, `parallel` at a time; returns their ids. */
async function submitMany(token: string, count: number, queue: string, parallel = 20): Promise<string[]> {
  const admission = clientFor(AdmissionService, cluster.admission.url, token);
  const ids: string[] = [];
  for (let start = 0; start < count; start += parallel) {
    const batch = Array.from({ length: Math.min(parallel, count - start) }, () =>
      admission.submitJob({ idempotencyKey: newIdempotencyKey('list'), queue }),
    );
    for (const response of await Promise.all(batch)) ids.push(response.job!.id);
  }
  return ids;
}

beforeAll(async () => {
  cluster = await startCluster({ databaseUrl: await createTestDatabase('list jobs') });
  alice = await cluster.tokenFor('alice', 'user');
  bob = await cluster.tokenFor('bob', 'user');
  for (const id of await submitMany(alice, 1_000, 'bulk')) existing.add(id);
  await submitMany(bob, 30, 'bulk');
}, 180_000);

afterAll(stopAll);

describe('ListJobs', () => {
  it('pages through 1,000 jobs with no duplicate or missing job while new jobs are submitted', async () => {
    const admission = clientFor(AdmissionService, cluster.admission.url, alice);
    let stop = false;
    const arrivals: string[] = [];
    let submitter: Promise<void> | undefined;

    const listed: string[] = [];
    let pageToken = '';
    let previousCreatedAt = Number.POSITIVE_INFINITY;
    do {
      // New jobs arrive from the moment the first page (and with it the
      // listing's snapshot) exists: a job committed before that moment
      // belongs to the listing, one committed after must never enter it.
      if (pageToken !== '' && !submitter) {
        submitter = (async () => {
          while (!stop) arrivals.push(...(await submitMany(alice, 5, 'bulk', 5)));
        })();
      }
      const page = await admission.listJobs({ pageSize: 37, pageToken, filter: { queue: 'bulk' } });
      for (const job of page.jobs) {
        const createdAt = Number(job.createdAt!.seconds) * 1000 + job.createdAt!.nanos / 1e6;
        expect(createdAt).toBeLessThanOrEqual(previousCreatedAt);
        previousCreatedAt = createdAt;
        listed.push(job.id);
      }
      pageToken = page.nextPageToken;
      await new Promise((resolve) => setTimeout(resolve, 5));
    } while (pageToken !== '');
    stop = true;
    await submitter;

    expect(arrivals.length).toBeGreaterThan(0);
    expect(listed).toHaveLength(new Set(listed).size);
    expect(new Set(listed)).toEqual(existing);
    for (const id of arrivals) expect(existing.has(id)).toBe(false);
  }, 120_000);

  it('applies AIP-158 page sizes: 0 means 50, above 200 means 200, negative is invalid', async () => {
    const admission = clientFor(AdmissionService, cluster.admission.url, alice);
    expect((await admission.listJobs({ pageSize: 0 })).jobs).toHaveLength(50);
    expect((await admission.listJobs({ pageSize: 5_000 })).jobs).toHaveLength(200);
    const failure = await failureOf(admission.listJobs({ pageSize: -1 }));
    expect(failure).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD' });
    expect(failure.violations.map((v) => v.field)).toEqual(['page_size']);
  });

  it('filters by status and queue, and shows admins every subject', async () => {
    const admission = clientFor(AdmissionService, cluster.admission.url, alice);
    const queued = await admission.listJobs({ pageSize: 10, filter: { statuses: [JobStatus.QUEUED], queue: 'bulk' } });
    expect(queued.jobs.every((job) => job.status === JobStatus.QUEUED && job.queue === 'bulk')).toBe(true);
    expect((await admission.listJobs({ filter: { statuses: [JobStatus.RUNNING] } })).jobs).toHaveLength(0);
    expect((await admission.listJobs({ filter: { queue: 'nothing-here' } })).jobs).toHaveLength(0);
    const admin = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor('root', 'admin'));
    const owners = new Set<string>();
    let pageToken = '';
    do {
      const page = await admin.listJobs({ pageSize: 200, pageToken });
      for (const job of page.jobs) owners.add(job.owner);
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
    expect(owners).toEqual(new Set(['alice', 'bob']));
  });

  it('refuses a page token altered by one bit, used by another subject or with another filter as CURSOR_INVALID', async () => {
    const admission = clientFor(AdmissionService, cluster.admission.url, alice);
    const filter = { queue: 'bulk' };
    const { nextPageToken } = await admission.listJobs({ pageSize: 10, filter });
    expect(nextPageToken).not.toBe('');
    await expect(admission.listJobs({ pageSize: 10, pageToken: nextPageToken, filter })).resolves.toBeDefined();

    const flipped = (index: number) => {
      const bytes = Buffer.from(nextPageToken, 'latin1');
      bytes[index] = (bytes[index] ?? 0) ^ 0x01;
      return bytes.toString('latin1');
    };
    const attempts = [
      () => admission.listJobs({ pageSize: 10, pageToken: flipped(3), filter }),
      () => admission.listJobs({ pageSize: 10, pageToken: flipped(nextPageToken.length - 2), filter }),
      () => clientFor(AdmissionService, cluster.admission.url, bob).listJobs({ pageSize: 10, pageToken: nextPageToken, filter }),
      () => admission.listJobs({ pageSize: 10, pageToken: nextPageToken, filter: { queue: 'other' } }),
      () => admission.listJobs({ pageSize: 10, pageToken: nextPageToken, filter: { ...filter, statuses: [JobStatus.QUEUED] } }),
      () => admission.listJobs({ pageSize: 10, pageToken: 'garbage', filter }),
    ];
    for (const attempt of attempts) {
      const failure = await failureOf(attempt());
      expect(failure).toMatchObject({ code: Code.InvalidArgument, reason: 'CURSOR_INVALID' });
      expect(failure.violations.map((v) => v.field)).toEqual(['page_token']);
    }
  });
});

import { Code } from '@connectrpc/connect';
import type pg from 'pg';
import { GENESIS_HASH, computeEventHash, newId, type JsonValue } from '@docket/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { clientFor, failureOf } from './support/clients.js';
import type { DocketServices } from './support/docket-services.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startInProcessCluster, stopInProcessClusters } from './support/in-process-cluster.js';
import { readWholeJournal } from './support/job-writer.js';
import { newIdempotencyKey } from './support/keys.js';
import { openSql } from './support/sql.js';

let cluster: DocketServices;
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

/**
 * Opens a transaction on `sql` that admits a job the way the state service
 * does (job row, its `job.admitted` event, its feed entry), as a copy of
 * alice's `offset`-th newest 'bulk' job with that job's created_at, and
 * leaves it open: its id is taken now, its commit is up to the caller.
 */
async function beginLateAdmission(sql: pg.Client, offset: number): Promise<{ id: string; createdAt: Date }> {
  type Template = { id: string; request_digest: string; created_at: Date; payload: { [k: string]: JsonValue } };
  const { rows } = await sql.query<Template>(
    `select j.id, j.request_digest, j.created_at, e.payload
       from jobs j join job_events e on e.job_id = j.id and e.sequence = 1
      where j.owner = 'alice' and j.queue = 'bulk'
      order by j.created_at desc, j.id desc offset $1 limit 1`,
    [offset],
  );
  const template = rows[0]!;
  const id = newId('job');
  const createdAt = template.created_at;
  const hash = computeEventHash({
    jobId: id,
    requestDigest: template.request_digest,
    sequence: 1n,
    previousHash: GENESIS_HASH,
    type: 'job.admitted',
    payload: template.payload,
    occurredAt: createdAt,
  });
  await sql.query('begin');
  await sql.query(
    `insert into jobs (id, owner, queue, label, input, priority, revision, status, lifecycle, request_digest, run_after,
                       max_attempts, initial_backoff_ms, max_backoff_ms, lost_attempt_policy, event_count, head_hash,
                       created_at, updated_at)
     select $1, owner, queue, label, input, priority, 1, 'QUEUED', 'ACTIVE', request_digest, run_after,
            max_attempts, initial_backoff_ms, max_backoff_ms, lost_attempt_policy, 1, $3, $2, $2
       from jobs where id = $4`,
    [id, createdAt, hash, template.id],
  );
  await sql.query(
    `insert into job_events (job_id, sequence, type, payload, occurred_at, previous_hash, hash)
     values ($1, 1, 'job.admitted', $2, $3, $4, $5)`,
    [id, JSON.stringify(template.payload), createdAt, GENESIS_HASH, hash],
  );
  await sql.query(
    `insert into job_changes (job_id, owner, queue, revision, status, lifecycle, changed_at)
     values ($1, 'alice', 'bulk', 1, 'QUEUED', 'ACTIVE', $2)`,
    [id, createdAt],
  );
  return { id, createdAt };
}

beforeAll(async () => {
  cluster = await startInProcessCluster({ databaseUrl: await createMigratedTestDatabase('list jobs') });
  alice = await cluster.tokenFor('alice', 'user');
  bob = await cluster.tokenFor('bob', 'user');
  for (const id of await submitMany(alice, 1_000, 'bulk')) existing.add(id);
  await submitMany(bob, 30, 'bulk');
}, 180_000);

afterAll(stopInProcessClusters);

describe('ListJobs', () => {
  it('pages through 1,000 jobs, each once, and never admits a job committed after the first page, even one that sorts inside it', async () => {
    const admission = clientFor(AdmissionService, cluster.admission.url, alice);
    // A job of alice's in 'bulk', written by a transaction that takes its id
    // before the first page and commits after it, with a created_at among the
    // pages still to come: keyset positions alone would list it; only the
    // first page's snapshot keeps it out.
    const late = await openSql(cluster.databaseUrl);
    const arrivals: string[] = [];
    let stop = false;
    let submitter: Promise<void> | undefined;
    try {
      const lateJob = await beginLateAdmission(late, 500);

      const listed: string[] = [];
      let firstPageOldest: number | undefined;
      let pageToken = '';
      let previousCreatedAt = Number.POSITIVE_INFINITY;
      do {
        const page = await admission.listJobs({ pageSize: 37, pageToken, filter: { queue: 'bulk' } });
        for (const job of page.jobs) {
          const createdAt = Number(job.createdAt!.seconds) * 1000 + job.createdAt!.nanos / 1e6;
          expect(createdAt).toBeLessThanOrEqual(previousCreatedAt);
          previousCreatedAt = createdAt;
          listed.push(job.id);
        }
        pageToken = page.nextPageToken;
        if (firstPageOldest === undefined) {
          firstPageOldest = previousCreatedAt;
          expect(lateJob.createdAt.getTime()).toBeLessThan(firstPageOldest);
          // The first page (and with it the listing's snapshot) exists: the
          // late job commits now. New jobs start to arrive as well (they are
          // newer than every cursor, so keyset positions alone keep them
          // out); the next page is asked for only once some have.
          await late.query('commit');
          let firstArrival!: () => void;
          const arrived = new Promise<void>((resolve) => (firstArrival = resolve));
          submitter = (async () => {
            while (!stop) {
              arrivals.push(...(await submitMany(alice, 5, 'bulk', 5)));
              firstArrival();
            }
          })();
          await Promise.race([arrived, submitter]);
        }
        // Real time: the pace of the paging, so that new jobs arrive between its pages.
        await new Promise((resolve) => setTimeout(resolve, 5));
      } while (pageToken !== '');
      stop = true;
      await submitter;

      // The late job sorts inside the pages served after it committed, and is not among them.
      expect(lateJob.createdAt.getTime()).toBeGreaterThanOrEqual(previousCreatedAt);
      expect(listed).not.toContain(lateJob.id);
      expect(listed).toHaveLength(new Set(listed).size);
      expect(new Set(listed)).toEqual(existing);

      // Both the late job and the arrivals are committed, listable jobs: a
      // listing started now shows every one of them, and the late job's
      // journal verifies.
      const fresh = new Set<string>();
      pageToken = '';
      do {
        const page = await admission.listJobs({ pageSize: 200, pageToken, filter: { queue: 'bulk' } });
        for (const job of page.jobs) fresh.add(job.id);
        pageToken = page.nextPageToken;
      } while (pageToken !== '');
      expect(fresh).toEqual(new Set([...existing, lateJob.id, ...arrivals]));
      expect((await readWholeJournal(cluster.events.url, alice, lateJob.id)).map((event) => event.type)).toEqual(['job.admitted']);
    } finally {
      stop = true;
      await submitter?.catch(() => {});
      await late.end();
    }
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
    // Every one of alice's 'bulk' jobs is QUEUED (no worker runs here): a full page of them.
    const queued = await admission.listJobs({ pageSize: 10, filter: { statuses: [JobStatus.QUEUED], queue: 'bulk' } });
    expect(queued.jobs.map((job) => [job.owner, job.queue, job.status])).toEqual(Array.from({ length: 10 }, () => ['alice', 'bulk', JobStatus.QUEUED]));
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
    const { jobs: firstPage, nextPageToken } = await admission.listJobs({ pageSize: 10, filter });
    expect(nextPageToken).not.toBe('');
    // The untouched token resumes exactly where the first page stopped: the next ten of a twenty-job listing.
    const twenty = (await admission.listJobs({ pageSize: 20, filter })).jobs.map((job) => job.id);
    expect(twenty).toHaveLength(20);
    expect(firstPage.map((job) => job.id)).toEqual(twenty.slice(0, 10));
    const secondPage = await admission.listJobs({ pageSize: 10, pageToken: nextPageToken, filter });
    expect(secondPage.jobs.map((job) => job.id)).toEqual(twenty.slice(10));

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

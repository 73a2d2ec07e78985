import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { clientFor } from './support/clients.js';
import type { DocketServices } from './support/docket-services.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startClusterWithSql, stopClustersWithSql } from './support/cluster-with-sql.js';
import { newIdempotencyKey } from './support/keys.js';

let cluster: DocketServices;
let sql: pg.Client;

beforeAll(async () => {
  ({ cluster, sql } = await startClusterWithSql(startInProcessCluster, {
    databaseUrl: await createMigratedTestDatabase('concurrent admission'),
    replicas: { state: 2, admission: 2 },
  }));
});

afterAll(stopClustersWithSql);

describe('concurrent duplicates', () => {
  it('200 submissions of one key over two admission and two state processes create one job and one event', async () => {
    const token = await cluster.tokenFor('alice', 'user');
    const admissions = cluster.replicas.admission.map((replica) => clientFor(AdmissionService, replica.url, token));
    expect(new Set(cluster.replicas.state.map((replica) => replica.url)).size).toBe(2);
    const request = { idempotencyKey: newIdempotencyKey('storm'), queue: 'email', input: { to: 'ada@example.com' } };

    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, index) => admissions[index % admissions.length]!.submitJob(request)),
    );

    const jobIds = new Set(responses.map((response) => response.job?.id));
    expect(jobIds.size).toBe(1);
    expect(responses.filter((response) => !response.replayed)).toHaveLength(1);
    const [jobId] = jobIds;
    const jobs = await sql.query("select id from jobs where owner = 'alice'");
    expect(jobs.rows).toEqual([{ id: jobId }]);
    // Only this test's rows: alice's jobs and alice's keys, whatever other tests of the file wrote.
    const events = await sql.query("select e.job_id, e.sequence, e.type from job_events e join jobs j on j.id = e.job_id where j.owner = 'alice'");
    expect(events.rows).toEqual([{ job_id: jobId, sequence: '1', type: 'job.admitted' }]);
    const records = await sql.query("select job_id from idempotency_records where subject = 'alice'");
    expect(records.rows).toEqual([{ job_id: jobId }]);
  });

  it('200 distinct keys at once create 200 jobs, each with exactly one event', async () => {
    const token = await cluster.tokenFor('carol', 'user');
    const admissions = cluster.replicas.admission.map((replica) => clientFor(AdmissionService, replica.url, token));
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, index) =>
        admissions[index % admissions.length]!.submitJob({ idempotencyKey: newIdempotencyKey(`distinct-${index}`), queue: 'email' }),
      ),
    );
    expect(new Set(responses.map((response) => response.job?.id)).size).toBe(200);
    const counts = await sql.query(
      "select count(*)::int as jobs, (select count(*)::int from job_events e join jobs j on j.id = e.job_id where j.owner = 'carol') as events from jobs where owner = 'carol'",
    );
    expect(counts.rows[0]).toEqual({ jobs: 200, events: 200 });
  });
});

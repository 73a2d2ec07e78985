import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { Health, HealthCheckResponse_ServingStatus as Status } from '@docket/proto/grpc/health/v1/health_pb.js';
import { clientFor, failureOf } from '../support/clients.js';
import { startCluster, stopAll, type DocketCluster } from '../support/cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { newIdempotencyKey } from '../support/keys.js';
import { until } from '../support/polling.js';

/*
 * A state service that stops answering (SIGSTOP: the process and its
 * sockets stay, nothing replies, as in a partition or a long GC pause)
 * must not hang its callers: a call without a deadline gets the internal
 * default (2 s here) and answers DEADLINE_EXCEEDED, never OK; admission's
 * health turns NOT_SERVING; and once state runs again everything works
 * without a restart.
 */

let cluster: DocketCluster;

beforeAll(async () => {
  cluster = await startCluster({
    databaseUrl: await createMigratedTestDatabase('state stopped'),
    env: { admission: { DOCKET_STATE_CALL_TIMEOUT_MS: '2000' }, execution: { DOCKET_BACKGROUND_LOOPS: 'off' } },
  });
});

afterAll(async () => {
  cluster?.state.process.kill('SIGCONT');
  await stopAll();
});

async function health(): Promise<Status> {
  return (await clientFor(Health, cluster.admission.url).check({ service: '' }, { timeoutMs: 2_000 })).status;
}

describe('a stopped state service', () => {
  it('answers callers without a deadline with DEADLINE_EXCEEDED, turns admission NOT_SERVING, and recovers when it runs again', async () => {
    const admission = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor('alice', 'user'));
    const { job } = await admission.submitJob({ idempotencyKey: newIdempotencyKey(), queue: 'stopped' });
    expect(await health()).toBe(Status.SERVING);

    cluster.state.process.kill('SIGSTOP');
    try {
      // No deadline from the caller: the internal default bounds the wait.
      const read = await failureOf(admission.getJob({ jobId: job!.id }));
      expect(read.code).toBe(Code.DeadlineExceeded);
      // A write without a deadline: refused, not acknowledged.
      const key = newIdempotencyKey();
      const write = await failureOf(admission.submitJob({ idempotencyKey: key, queue: 'stopped' }));
      expect([Code.DeadlineExceeded, Code.Unavailable]).toContain(write.code);
      await until(async () => (await health()) === Status.NOT_SERVING, 'admission to report NOT_SERVING');
    } finally {
      cluster.state.process.kill('SIGCONT');
    }

    await until(async () => (await health()) === Status.SERVING, 'admission to report SERVING again');
    expect((await admission.getJob({ jobId: job!.id })).job?.id).toBe(job!.id);
    const after = await admission.submitJob({ idempotencyKey: newIdempotencyKey(), queue: 'stopped' });
    expect(after.job?.status).toBe(JobStatus.QUEUED);
  });
});

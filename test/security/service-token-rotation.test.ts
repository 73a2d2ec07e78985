import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { clientFor } from '../support/clients.js';
import type { DocketServices } from '../support/docket-services.js';
import { startInProcessCluster, stopInProcessClusters } from '../support/in-process-cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { newIdempotencyKey } from '../support/keys.js';

/*
 * The front services' tokens to the state service are short-lived, and a
 * state stream ends when the token that opened it expires. The events
 * service must carry its subscribers across that: it reopens its upstream
 * with a fresh token and the subscriber sees every event, with no gap and
 * no error. Here the service tokens live 3 s (the default is 5 minutes), so
 * the events service's upstream streams expire several times during the test.
 */

const TOKEN_TTL_SECONDS = 3;
let cluster: DocketServices;

beforeAll(async () => {
  const fronts = { DOCKET_SERVICE_TOKEN_TTL_SECONDS: String(TOKEN_TTL_SECONDS), DOCKET_AUTH_CLOCK_TOLERANCE_SECONDS: '1' };
  cluster = await startInProcessCluster({
    databaseUrl: await createMigratedTestDatabase('service token rotation'),
    env: { admission: fronts, events: { ...fronts, DOCKET_HEARTBEAT_MS: '500' }, execution: { ...fronts, DOCKET_BACKGROUND_LOOPS: 'off' } },
  });
});

afterAll(stopInProcessClusters);

describe('internal streams across service-token expiry', () => {
  it('keeps a StreamJobEvents subscriber whole while its upstream token expires again and again', async () => {
    const token = await cluster.tokenFor('alice', 'user');
    const admission = clientFor(AdmissionService, cluster.admission.url, token);
    const { job } = await admission.submitJob({ idempotencyKey: newIdempotencyKey(), queue: 'rotation' });
    const controller = new AbortController();
    const seen: bigint[] = [];
    const stream = (async () => {
      for await (const frame of clientFor(EventService, cluster.events.url, token).streamJobEvents({ jobId: job!.id }, { signal: controller.signal })) {
        if (frame.frame.case === 'page') seen.push(...frame.frame.value.events.map((event) => event.sequence));
        if (frame.frame.case === 'end') return 'ended';
      }
      return 'closed';
    })();
    // Three token lifetimes pass while the subscriber waits; then the job changes.
    // Real time: the service tokens (3 s, with 1 s of clock tolerance) really have to expire, three times.
    await new Promise((resolve) => setTimeout(resolve, (3 * TOKEN_TTL_SECONDS + 1) * 1000));
    await admission.pauseJob({ idempotencyKey: newIdempotencyKey(), jobId: job!.id });
    await admission.cancelJob({ idempotencyKey: newIdempotencyKey(), jobId: job!.id });
    // Real time: a timeout race, the bound on the stream's end.
    const outcome = await Promise.race([stream, new Promise((resolve) => setTimeout(() => resolve('timed out'), 15_000))]);
    controller.abort();
    expect(outcome).toBe('ended');
    expect(seen).toEqual([1n, 2n, 3n]);
    // The upstream did expire and was reopened (more than once), unnoticed by the subscriber.
    const reopened = cluster.events.logs
      .map((line) => JSON.parse(line) as { msg?: string; upstream_reopened_total?: number })
      .filter((line) => line.msg === 'subscribers')
      .map((line) => line.upstream_reopened_total ?? 0);
    expect(Math.max(0, ...reopened)).toBeGreaterThanOrEqual(2);
    // And ordinary calls keep working with the renewed tokens.
    expect((await admission.getJob({ jobId: job!.id })).job?.id).toBe(job!.id);
  }, 60_000);
});

import { Code, ConnectError } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '@docket/auth';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { clientFor } from '../support/clients.js';
import type { DocketServices } from '../support/docket-services.js';
import { startInProcessCluster, stopInProcessClusters } from '../support/in-process-cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { newIdempotencyKey } from '../support/keys.js';

/*
 * A stream lives no longer than the token that opened it: when the token's
 * exp passes, StreamJobEvents and WatchJobs end with UNAUTHENTICATED (and
 * a client reconnects with a fresh token, resuming where it was), instead
 * of serving a caller whose credential has lapsed for as long as the
 * connection stays up.
 */

let cluster: DocketServices;

beforeAll(async () => {
  const events = { DOCKET_HEARTBEAT_MS: '300', DOCKET_AUTH_CLOCK_TOLERANCE_SECONDS: '1' };
  cluster = await startInProcessCluster({ databaseUrl: await createMigratedTestDatabase('stream token expiry'), env: { events } });
});

afterAll(stopInProcessClusters);

/** Reads `stream` until it ends; how many frames arrived and how it ended. */
async function drain(stream: AsyncIterable<unknown>): Promise<{ frames: number; error: ConnectError | undefined; endedAtMs: number }> {
  let frames = 0;
  try {
    for await (const _frame of stream) frames++;
    return { frames, error: undefined, endedAtMs: Date.now() };
  } catch (error) {
    return { frames, error: ConnectError.from(error), endedAtMs: Date.now() };
  }
}

describe('a stream opened with a short-lived token', () => {
  it('StreamJobEvents and WatchJobs end with UNAUTHENTICATED when the token expires, having served until then', async () => {
    const token = await mintToken({ secret: cluster.secret, subject: 'alice', role: 'user', ttlSeconds: 3 });
    const { exp } = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { exp: number };
    const { job } = await clientFor(AdmissionService, cluster.admission.url, token).submitJob({ idempotencyKey: newIdempotencyKey(), queue: 'expiry' });
    const events = clientFor(EventService, cluster.events.url, token);
    const [tail, feed] = await Promise.all([drain(events.streamJobEvents({ jobId: job!.id })), drain(events.watchJobs({}))]);
    for (const ended of [tail, feed]) {
      expect(ended.error?.code).toBe(Code.Unauthenticated);
      // Heartbeats every 300 ms until the end: it served while the token was valid.
      expect(ended.frames).toBeGreaterThanOrEqual(3);
      expect(ended.endedAtMs).toBeGreaterThanOrEqual(exp * 1000);
    }
  });

  it('a stream with a long-lived token keeps going', async () => {
    const token = await cluster.tokenFor('alice', 'user');
    const controller = new AbortController();
    let frames = 0;
    const watching = (async () => {
      for await (const _frame of clientFor(EventService, cluster.events.url, token).watchJobs({}, { signal: controller.signal })) frames++;
    })().catch((error: unknown) => ConnectError.from(error));
    // Real time: a negative assertion: nothing ends the stream within 2 s, while it heartbeats.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    controller.abort();
    expect((await watching)?.code).toBe(Code.Canceled);
    expect(frames).toBeGreaterThanOrEqual(3);
  });
});

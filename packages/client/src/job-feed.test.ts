import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, createRouterTransport } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { EventService, ResyncReason, type WatchJobsResponseSchema } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { createClient } from './create-client.js';
import type { JobFeedFrame } from './job-feed.js';

/*
 * The change feed's resumption, against an in-memory EventService whose
 * connections each serve a few frames and then fail or close: every
 * reconnection must carry the cursor of the last frame received
 * (heartbeats included), and frames must reach the caller exactly once.
 */

function fakeFeed() {
  const requests: { cursor: string; queue: string }[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(EventService, {
      readJobEvents: () => ({}),
      streamJobEvents: async function* () {},
      async *watchJobs(request): AsyncGenerator<MessageInitShape<typeof WatchJobsResponseSchema>> {
        requests.push({ cursor: request.cursor, queue: request.filter?.queue ?? '' });
        switch (requests.length) {
          case 1:
            yield { cursor: 'c0', frame: { case: 'resyncRequired', value: { reason: ResyncReason.CURSOR_ABSENT } } };
            yield { cursor: 'c1', frame: { case: 'jobChanged', value: { jobId: 'job_a0000000', revision: 1n, status: JobStatus.QUEUED } } };
            throw new ConnectError('draining', Code.Unavailable);
          case 2:
            yield { cursor: 'c2', frame: { case: 'heartbeat', value: {} } };
            return; // closed without an error
          case 3:
            yield { cursor: 'c3', frame: { case: 'jobChanged', value: { jobId: 'job_a0000000', revision: 2n, status: JobStatus.RUNNING } } };
            throw new ConnectError('refused', Code.PermissionDenied);
        }
      },
    });
  });
  return { client: createClient({ transports: { admission: transport, events: transport }, reconnect: { tries: 3, initialDelayMs: 1, maxDelayMs: 2 } }), requests };
}

describe('watchJobs against a stand-in EventService', () => {
  it('reconnects from the latest cursor and surfaces resync_required as a frame', async () => {
    const { client, requests } = fakeFeed();
    const frames: JobFeedFrame[] = [];
    let failure: unknown;
    try {
      for await (const frame of client.watchJobs({ filter: { queue: 'q' } })) frames.push(frame);
    } catch (error) {
      failure = error;
    }
    expect(frames.map((f) => [f.kind, f.cursor])).toEqual([
      ['resync_required', 'c0'],
      ['job_changed', 'c1'],
      ['job_changed', 'c3'],
    ]);
    expect(frames[0]).toMatchObject({ reason: ResyncReason.CURSOR_ABSENT });
    expect(requests).toEqual([
      { cursor: '', queue: 'q' },
      { cursor: 'c1', queue: 'q' },
      { cursor: 'c2', queue: 'q' },
    ]);
    expect(failure).toMatchObject({ name: 'DocketClientError', code: Code.PermissionDenied });
  });

  it('yields heartbeats when asked to', async () => {
    const { client } = fakeFeed();
    const kinds: string[] = [];
    try {
      for await (const frame of client.watchJobs({ heartbeats: true })) kinds.push(frame.kind);
    } catch {
      // The third connection is refused.
    }
    expect(kinds).toEqual(['resync_required', 'job_changed', 'heartbeat', 'job_changed']);
  });
});

import type { Client } from '@connectrpc/connect';
import type { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { EventService, JobChanged, ResyncReason, WatchJobsResponse } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { resumableStream } from './resumable-stream.js';
import type { RetryPolicy } from './retry-policy.js';
import { DEFAULT_IDLE_TIMEOUT_MS } from './job-watch.js';

/** One frame of {@link DocketClient.watchJobs}; each carries the cursor that resumes right after it. */
export type JobFeedFrame =
  | {
      readonly kind: 'job_changed';
      readonly cursor: string;
      /** An invalidation: re-read the job if `change.revision` is newer than the one held. */
      readonly change: JobChanged;
    }
  | {
      readonly kind: 'resync_required';
      readonly cursor: string;
      /** Why: the feed may have missed changes; re-read the snapshot (GetJob or ListJobs) and keep consuming. */
      readonly reason: ResyncReason;
    }
  | {
      readonly kind: 'heartbeat';
      /** The current head: store it to resume from a fresh position. */
      readonly cursor: string;
    };

/** Options of {@link DocketClient.watchJobs}. */
export interface WatchJobsOptions {
  /** Which jobs; unset watches every job the caller may see. */
  readonly filter?: { readonly statuses?: readonly JobStatus[]; readonly queue?: string };
  /**
   * Where to resume: a previous frame's cursor, or a snapshot's
   * `event_cursor`. Unset starts at the current head (the first frame is
   * then `resync_required`, reason CURSOR_ABSENT).
   */
  readonly cursor?: string;
  /** Yield heartbeat frames too (default false; their cursors are followed either way). */
  readonly heartbeats?: boolean;
  /** Aborting ends the feed with CANCELLED. */
  readonly signal?: AbortSignal;
  /** Drop and reopen a connection silent this long (default 45 000 ms). */
  readonly idleTimeoutMs?: number;
}

/** What {@link watchJobFeed} needs from its client. */
export interface JobFeedContext {
  readonly events: Client<typeof EventService>;
  readonly reconnect: RetryPolicy;
  readonly secrets: readonly string[];
}

/**
 * The change feed (see {@link DocketClient.watchJobs}), reopened after a
 * disconnect from the cursor of the last frame received, so nothing that
 * was delivered is delivered again and nothing after it is skipped. The
 * feed has no end: it runs until the caller breaks out or aborts, or
 * reconnection gives up.
 */
export async function* watchJobFeed(context: JobFeedContext, options: WatchJobsOptions = {}): AsyncGenerator<JobFeedFrame, void, undefined> {
  let cursor = options.cursor ?? '';
  const filter = { statuses: [...(options.filter?.statuses ?? [])], queue: options.filter?.queue ?? '' };
  const frames = resumableStream<WatchJobsResponse>((signal) => context.events.watchJobs({ cursor, filter }, { signal }), {
    rpc: 'WatchJobs',
    reconnect: context.reconnect,
    signal: options.signal,
    idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
    secrets: context.secrets,
  });
  for await (const response of frames) {
    if (response.cursor !== '') cursor = response.cursor;
    const { frame } = response;
    if (frame.case === 'jobChanged') yield { kind: 'job_changed', cursor: response.cursor, change: frame.value };
    else if (frame.case === 'resyncRequired') yield { kind: 'resync_required', cursor: response.cursor, reason: frame.value.reason };
    else if (frame.case === 'heartbeat' && options.heartbeats === true) yield { kind: 'heartbeat', cursor: response.cursor };
  }
}

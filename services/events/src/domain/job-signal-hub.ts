import { durationFromMs } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import type { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { Progress } from '@docket/proto/docket/common/v1/progress_pb.js';
import type { StateService, WatchChangesResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { FanOut, SharedUpstream, type Logger } from '@docket/service-kit';
import type { SubscriberGauge } from './subscriber-gauge.js';

/** How often the state service sends a tick on a quiet stream. */
export const UPSTREAM_HEARTBEAT_MS = 1_000;
/** How long a silent stream is trusted: past it the upstream is taken for lost (state stopped, a half-open connection) and reopened. */
export const UPSTREAM_SILENCE_LIMIT_MS = 3_000;

/** A job changed: its head as of the change, and its latest progress if it reported any. */
export interface JobNews {
  readonly latestSequence: bigint;
  readonly status: JobStatus;
  readonly progress: Progress | undefined;
}

/** Receives a job's news; `'gap'` means news may have been missed: read again once {@link JobSignalHub.live}. */
export type JobListener = (news: JobNews | 'gap') => void;

/**
 * The events process's one stream of change signals from the state service
 * (WatchChanges with job signals and a 1 s heartbeat), fanned out in
 * memory: every StreamJobEvents subscriber registers for its job, every
 * WatchJobs walk for the whole feed, and none holds a stream of its own,
 * so the state service serves one stream per events process whatever the
 * number of subscribers.
 *
 * The stream is opened at start-up and reopened with backoff whenever it
 * breaks or stays silent for {@link UPSTREAM_SILENCE_LIMIT_MS}; each break
 * and each recovery is a gap for everyone, who re-reads after their own
 * cursor. {@link live} tells subscribers whether the upstream is up, so
 * none claims liveness (a heartbeat) it does not have.
 */
export class JobSignalHub {
  readonly #watchers = new FanOut<JobNews | 'gap'>();
  readonly #upstream: SharedUpstream<WatchChangesResponse>;
  #counted = false;
  #brokenBefore = false;
  /** When the upstream was last lost (or the hub made), while it is not live. */
  #lostSince = performance.now();

  /**
   * @param resetConnection drops the connection to the state service (a
   *   silent upstream means it is most likely dead; see `ServiceTransport`)
   */
  constructor(
    state: Client<typeof StateService>,
    logger: Logger,
    private readonly gauge: SubscriberGauge,
    resetConnection: () => void = () => {},
  ) {
    this.#upstream = new SharedUpstream({
      name: 'change stream to the state service',
      open: (signal) => state.watchChanges({ includeJobs: true, heartbeatInterval: durationFromMs(UPSTREAM_HEARTBEAT_MS) }, { signal }),
      onFrame: (frame) => this.#dispatch(frame),
      onGap: () => this.#gap(),
      logger,
      silenceLimitMs: UPSTREAM_SILENCE_LIMIT_MS,
      onSilent: resetConnection,
    });
  }

  /** Opens the upstream; idempotent. */
  start(): void {
    this.#upstream.start();
  }

  /** Closes the upstream for good. */
  close(): Promise<void> {
    return this.#upstream.close();
  }

  /** Whether the upstream is up: a read after a cursor now will be followed by news of any later commit. */
  get live(): boolean {
    return this.#upstream.live;
  }

  /** How long the upstream has not been live; 0 while it is. */
  lostForMs(): number {
    return this.live ? 0 : performance.now() - this.#lostSince;
  }

  /** Resolves once the upstream is {@link live}, or when `signal` aborts. */
  whenLive(signal: AbortSignal): Promise<void> {
    return this.#upstream.whenLive(signal);
  }

  /** Calls `listener` with each change of `jobId` and each gap; returns the unsubscribe function. */
  watchJob(jobId: string, listener: JobListener): () => void {
    return this.#watchers.watch(jobId, listener);
  }

  /** Calls `listener` after any change of any job, and on each gap; returns the unsubscribe function. */
  watchFeed(listener: () => void): () => void {
    return this.#watchers.watchAll(() => listener());
  }

  /** Jobs and feed walks registered (for tests and metrics). */
  get watcherCount(): number {
    return this.#watchers.count;
  }

  #dispatch(frame: WatchChangesResponse): void {
    if (frame.anyQueue) return this.#watchers.broadcast('gap');
    for (const signal of frame.jobSignals) {
      this.#watchers.deliver(signal.jobId, { latestSequence: signal.latestSequence, status: signal.status, progress: signal.progress });
    }
  }

  #gap(): void {
    if (this.#upstream.live && !this.#counted) {
      this.#counted = true;
      this.gauge.opened('upstream_streams');
      if (this.#brokenBefore) this.gauge.reopened();
    } else if (!this.#upstream.live && this.#counted) {
      this.#counted = false;
      this.#brokenBefore = true;
      this.#lostSince = performance.now();
      this.gauge.closed('upstream_streams');
    }
    this.#watchers.broadcast('gap');
  }
}

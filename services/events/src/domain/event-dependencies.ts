import type { Client } from '@connectrpc/connect';
import type { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { Drain, FeedCursorCodec } from '@docket/service-kit';
import type { JobSignalHub } from './job-signal-hub.js';
import type { SharedChangeFeed } from './shared-change-feed.js';
import type { SharedJournalReads } from './shared-journal-reads.js';
import type { SubscriberGauge } from './subscriber-gauge.js';

/** What the events domain needs: the state service, the process's shared upstream, reads and feed walk, and its settings. */
export interface EventDependencies {
  readonly state: Client<typeof StateService>;
  readonly hub: JobSignalHub;
  readonly reads: SharedJournalReads;
  readonly feed: SharedChangeFeed;
  readonly cursors: FeedCursorCodec;
  /** How long a stream may stay silent before it sends a heartbeat. */
  readonly heartbeatMs: number;
  readonly gauge: SubscriberGauge;
}

/** The two ways a stream is asked to stop. */
export interface StreamSignals {
  /** Aborts when the client cancels or its deadline passes (and when the call ends). */
  readonly signal: AbortSignal;
  /** Fires when the server begins a graceful shutdown: send a final frame and return. */
  readonly drain: Drain;
}

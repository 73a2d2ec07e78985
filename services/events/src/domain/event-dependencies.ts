import type { Client } from '@connectrpc/connect';
import type { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { FeedCursorCodec } from '@docket/service-kit';
import type { SubscriberGauge } from './subscriber-gauge.js';

/** What the events domain needs: the state service and its settings. */
export interface EventDependencies {
  readonly state: Client<typeof StateService>;
  readonly cursors: FeedCursorCodec;
  /** How long a stream may stay silent before it sends a heartbeat. */
  readonly heartbeatMs: number;
  readonly gauge: SubscriberGauge;
}

/** The two ways a stream is asked to stop. */
export interface StreamSignals {
  /** Aborts when the client cancels or its deadline passes (and when the call ends). */
  readonly signal: AbortSignal;
  /** Aborts when the server begins a graceful shutdown: send a final frame and return. */
  readonly drain: AbortSignal;
}

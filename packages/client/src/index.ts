/**
 * `@docket/client`: call Docket's public API from TypeScript. Submissions
 * and every other mutation are idempotent by key and retried only when
 * they may have succeeded, always with the same key; listings page
 * themselves; `watch` streams a job's journal, verifying its hash chain
 * and resuming after disconnects with no gap and no duplicate; `watchJobs`
 * follows the change feed by cursor; every failure is a typed
 * `DocketClientError`. Node transports are built from a URL and a token;
 * other platforms pass their own Connect transports. Deep imports are not
 * part of the API.
 */
export {
  DocketClient,
  createClient,
  isTerminalStatus,
  type ClientOptions,
  type DeletionReceipt,
  type JobPage,
  type JobReceipt,
  type JobSpec,
  type ListOptions,
  type MutationOptions,
  type MutationReceipt,
  type ReadOptions,
  type SignalReceipt,
  type TransitionOptions,
} from './docket-client.js';
export {
  DEFAULT_ADMISSION_URL,
  DEFAULT_EVENTS_URL,
  bearerAuth,
  createNodeTransports,
  type DocketTransports,
  type NodeTransportOptions,
  type NodeTransports,
  type TokenSource,
} from './node-transports.js';
export { tracedCalls } from '@docket/trace-context';
export { DocketClientError, isDocketClientError, type ClientFieldViolation, type LocalClientErrorReason } from './docket-client-error.js';
export { GENERATED_KEY_LENGTH, isValidIdempotencyKey, newIdempotencyKey } from './idempotency-key.js';
export { DEFAULT_RETRY_POLICY, isRetryableFailure, type RetryPolicy } from './retry-policy.js';
export { DEFAULT_IDLE_TIMEOUT_MS, type JobWatchFrame, type WatchOptions } from './job-watch.js';
export type { JobFeedFrame, WatchJobsOptions } from './job-feed.js';
export { JournalChain, type JournalAnchor, type JournalBreak } from './journal-chain.js';
export { JobStatus, JobLifecycle } from '@docket/proto/docket/common/v1/job_status_pb.js';
export { ResyncReason } from '@docket/proto/docket/events/v1/event_service_pb.js';

/** What `@docket/client` offers on every platform; the entries add how it connects (index.ts: Node, browser.ts: browsers). */
export {
  DocketClient,
  isTerminalStatus,
  type BulkOperationReceipt,
  type ClientOptions,
  type DeletionReceipt,
  type JobExplanation,
  type JobPage,
  type JobReceipt,
  type SubmitReceipt,
  type ScheduleReceipt,
  type JobSpec,
  type JournalPage,
  type ListOptions,
  type MutationOptions,
  type MutationReceipt,
  type ReadOptions,
  type SignalReceipt,
  type TransitionOptions,
  type TransportConnector,
} from './docket-client.js';
export {
  DEFAULT_ADMISSION_URL,
  DEFAULT_EVENTS_URL,
  bearerAuth,
  type DocketTransports,
  type NodeTransportOptions,
  type TokenSource,
} from './transports.js';
export { tracedCalls } from '@docket/trace-context';
export { DocketClientError, isDocketClientError, type ClientFieldViolation, type LocalClientErrorReason } from './docket-client-error.js';
export { GENERATED_KEY_LENGTH, isValidIdempotencyKey, newIdempotencyKey } from './idempotency-key.js';
export { isRetryableFailure } from '@docket/client-kit';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry-policy.js';
export type { BatchJob, SubmitManyOptions, SubmitManyResult } from './submit-many.js';
export { DEFAULT_IDLE_TIMEOUT_MS, type JobWatchFrame, type WatchOptions } from './job-watch.js';
export type { JobFeedFrame, WatchJobsOptions } from './job-feed.js';
export { JournalChain, journalEventOf, storedEventOf, type JournalAnchor, type JournalBreak, type JournalEvent } from './journal-chain.js';
export { JobStatus, JobLifecycle } from '@docket/proto/docket/common/v1/job_status_pb.js';
export { ResyncReason } from '@docket/proto/docket/events/v1/event_service_pb.js';

/**
 * `@docket/worker-sdk`: run Docket jobs in a TypeScript process. A worker
 * registers, claims jobs under fenced leases with bounded concurrency,
 * renews each lease on a timer, delivers cancel and pause requests to the
 * handler as an AbortSignal, reports progress, checkpoints, events and the
 * outcome, asks the job's owner for approval, delivers the owner's signals,
 * performs external side effects once per key through the effect journal,
 * and drains gracefully. Deep imports are not part of the API.
 */
export { createWorker, type Worker, type WorkerExit, type WorkerState } from './create-worker.js';
export type { AttemptCounts } from './attempt-pipeline.js';
export { DEFAULT_EXECUTION_URL, type WorkerOptions } from './worker-options.js';
export type { ApprovalRequested, JobContext, JobHandler, JobResult, LastApproval } from './job-context.js';
export type { JobSignal } from './signal-inbox.js';
export {
  EffectRecoverableError,
  effectInputDigest,
  isEffectRecoverableError,
  type EffectCommitContext,
  type EffectResult,
  type EffectStepContext,
  type EffectSteps,
} from './effect-runner.js';
export type { EffectRecord, EffectRecovery, EffectRecoveryReasonName, EffectStateName, WorkerRecoveryReason } from './effect-record.js';
export { JobAbortedError, abortKindOf, type AbortKind } from './abort-reason.js';
export {
  FAILURE_MESSAGE_MAX,
  JobFailure,
  isJobFailure,
  isWorkerFailureClass,
  permanentFailure,
  retryableFailure,
  type PermanentFailureClass,
  type RetryableFailureClass,
  type WorkerFailureClass,
} from './job-failure.js';
export { GENERIC_FAILURE_MESSAGE, type DescribeError } from './outcome-plan.js';
export { DocketWorkerError, isDocketWorkerError, type LocalWorkerErrorReason } from './docket-worker-error.js';
export type { TokenSource } from './execution-client.js';
export { WorkSessionClient } from './work-session.js';
export { silentLogger, type WorkerLogger } from './worker-logger.js';
export type { WorkerStats } from './worker-stats.js';

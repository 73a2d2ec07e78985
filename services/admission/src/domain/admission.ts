import { create } from '@bufbuild/protobuf';
import { durationFromMs, timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { DocketError, coerceListPageSize, invalidField, isValidId, parseIdempotencyKey } from '@docket/contracts';
import type { Principal } from '@docket/auth';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { RetryPolicySchema } from '@docket/proto/docket/common/v1/retry_policy_pb.js';
import {
  SubmitJobRequestSchema,
  type ExplainJobResponse,
  type GetJobResponse,
  type ListJobsRequest,
  type ListJobsResponse,
  type SubmitJobRequest,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import {
  ExplainJobResponseSchema,
  GetJobResponseSchema,
  ListJobsResponseSchema,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import {
  AdmitJobRequestSchema,
  type AdmitJobRequest,
  type FeedPosition,
} from '@docket/proto/docket/state/v1/state_service_pb.js';
import {
  callerOf,
  normaliseFeedFilter,
  type BatchingStateClient,
  validateJobSpecMessage,
  type FeedCursorCodec,
  type ForwardedDeadline,
  type Logger,
} from '@docket/service-kit';
import type { PageTokenCodec } from './page-token.js';
import { fingerprintRequest } from './request-fingerprint.js';

/** What the admission domain needs: the state service and its settings. */
export interface AdmissionDependencies {
  readonly state: BatchingStateClient;
  readonly pageTokens: PageTokenCodec;
  readonly feedCursors: FeedCursorCodec;
  readonly idempotencyTtlMs: number;
  /** Where an item's unexpected failure is logged (its caller gets INTERNAL). */
  readonly logger: Logger;
}

/** The RPC path SubmitJob binds idempotency keys and digests to. */
export const SUBMIT_JOB_OPERATION = 'docket.admission.v1.AdmissionService/SubmitJob';

/**
 * Admits a job for the authenticated caller (see {@link admissionOf}); the
 * state service decides, in one transaction, create or replay. Answers
 * with the SubmitJobResponse's bytes (`submitJobAnswer` makes the answer).
 */
export async function submitJob(deps: AdmissionDependencies, principal: Principal, request: SubmitJobRequest, call: ForwardedDeadline): Promise<Uint8Array> {
  return deps.state.admitJobAnswer(admissionOf(deps, principal, request), call);
}

/**
 * The state service's admission of one SubmitJob request. Everything is
 * validated here first (field violations for the key and the job
 * description); the digest is computed from the request as received and
 * the subject from the token.
 */
export function admissionOf(deps: AdmissionDependencies, principal: Principal, request: SubmitJobRequest): AdmitJobRequest {
  parseIdempotencyKey(request.idempotencyKey);
  if (request.dependsOnItems.length > 0) {
    // Only SubmitJobs has items to name; SubmitJobs resolves them to `depends_on` before it gets here.
    throw invalidField('depends_on_items', 'names items of a SubmitJobs call: out of range here');
  }
  const spec = validateJobSpecMessage(request);
  const digest = fingerprintRequest(SubmitJobRequestSchema, request, SUBMIT_JOB_OPERATION, principal.subject, new Map([[spec.input, spec.canonicalInput]]));
  return create(AdmitJobRequestSchema, {
    caller: callerOf(principal),
    operation: SUBMIT_JOB_OPERATION,
    idempotencyKey: request.idempotencyKey,
    requestDigest: digest,
    idempotencyTtl: durationFromMs(deps.idempotencyTtlMs),
    spec: {
      queue: spec.queue,
      input: spec.input,
      label: spec.label,
      priority: spec.priority,
      runAfter: spec.runAfter ? timestampFromDate(spec.runAfter) : undefined,
      retryPolicy: create(RetryPolicySchema, {
        maxAttempts: spec.maxAttempts,
        initialBackoff: durationFromMs(spec.initialBackoffMs),
        maxBackoff: durationFromMs(spec.maxBackoffMs),
      }),
      lostAttemptPolicy: request.lostAttemptPolicy,
      uniqueWhileActive: request.uniqueWhileActive,
      attemptTimeout: request.attemptTimeout,
      heartbeatTimeout: request.heartbeatTimeout,
      concurrencyKey: request.concurrencyKey,
      dependsOn: [...spec.dependsOn],
      onParentFailure: request.onParentFailure,
    },
  });
}

/** A job the caller may see; NOT_FOUND for missing and foreign alike. */
export async function getJob(
  deps: AdmissionDependencies,
  principal: Principal,
  jobId: string,
  call: ForwardedDeadline,
): Promise<GetJobResponse> {
  if (!isValidId(jobId)) throw invalidField('job_id', 'must be a Docket job id');
  const found = await deps.state.getJob({ caller: callerOf(principal), jobId }, call);
  return create(GetJobResponseSchema, { job: withEventCursor(deps, principal, found.job, found.feedPosition) });
}

/**
 * ExplainJob: why a job the caller may see is or is not running now (the
 * state service decides); its job carries an event cursor as GetJob's does.
 */
export async function explainJob(deps: AdmissionDependencies, principal: Principal, jobId: string, call: ForwardedDeadline): Promise<ExplainJobResponse> {
  if (!isValidId(jobId)) throw invalidField('job_id', 'must be a Docket job id');
  const found = await deps.state.explainJob({ caller: callerOf(principal), jobId }, call);
  if (!found.response) throw new DocketError('INTERNAL', 'the state service answered without an explanation');
  return create(ExplainJobResponseSchema, { ...found.response, job: withEventCursor(deps, principal, found.response.job, found.feedPosition) });
}

/** `job` with the WatchJobs cursor of the read's feed position: resuming the feed from it misses no later change. */
function withEventCursor(deps: AdmissionDependencies, principal: Principal, job: Job | undefined, feedPosition: FeedPosition | undefined): Job | undefined {
  if (!job) return undefined;
  const eventCursor = feedPosition ? deps.feedCursors.seal(feedPosition, { subject: principal.subject, filter: normaliseFeedFilter(undefined) }) : '';
  return { ...job, eventCursor };
}

/**
 * One page of the caller's jobs (all jobs for admins), bound to the first
 * page's snapshot through the page token.
 */
export async function listJobs(
  deps: AdmissionDependencies,
  principal: Principal,
  request: ListJobsRequest,
  call: ForwardedDeadline,
): Promise<ListJobsResponse> {
  const pageSize = coerceListPageSize(request.pageSize);
  const statuses = [...new Set(request.filter?.statuses ?? [])].sort((a, b) => a - b);
  statuses.forEach((status, index) => {
    if (JobStatus[status] === undefined || status === JobStatus.UNSPECIFIED) {
      throw invalidField(`filter.statuses[${index}]`, 'must be a job status');
    }
  });
  const parentJobId = request.filter?.parentJobId ?? '';
  if (parentJobId !== '' && !isValidId(parentJobId)) throw invalidField('filter.parent_job_id', 'must be a Docket job id');
  const filter = {
    statuses: statuses.map((status) => JobStatus[status]),
    queue: request.filter?.queue ?? '',
    includeDeleted: request.filter?.includeDeleted ?? false,
    // Only when set, so that tokens of listings without it keep their binding.
    ...(parentJobId === '' ? {} : { parentJobId }),
  };
  const binding = { subject: principal.subject, filter };
  const position = request.pageToken === '' ? undefined : deps.pageTokens.open(request.pageToken, binding);
  const page = await deps.state.listJobs(
    {
      caller: callerOf(principal),
      pageSize,
      statuses,
      queue: filter.queue,
      includeDeleted: filter.includeDeleted,
      parentJobId,
      snapshot: position?.snapshot ?? '',
      after: position ? { createdAt: timestampFromDate(position.createdAt), jobId: position.jobId } : undefined,
    },
    call,
  );
  const last = page.jobs.at(-1);
  const nextPageToken =
    page.hasMore && last?.createdAt
      ? deps.pageTokens.seal(
          { snapshot: page.snapshot, createdAt: timestampDate(last.createdAt), jobId: last.id },
          binding,
        )
      : '';
  const eventCursor = page.feedPosition
    ? deps.feedCursors.seal(page.feedPosition, {
        subject: principal.subject,
        filter: normaliseFeedFilter({ statuses, queue: filter.queue }),
      })
    : '';
  return create(ListJobsResponseSchema, { jobs: page.jobs, nextPageToken, eventCursor });
}

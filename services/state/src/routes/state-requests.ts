import { timestampDate } from '@bufbuild/protobuf/wkt';
import {
  JOB_STATUSES,
  coerceEventPageSize,
  coerceListPageSize,
  invalidField,
  DocketError,
  isIdOf,
  isValidId,
  isValidQueueName,
  parseIdempotencyKey,
  parseRequestDigest,
  type JobStatusName,
} from '@docket/contracts';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { ApprovalDecision } from '@docket/proto/docket/common/v1/approval_pb.js';
import { SignalReconcileAction } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { checkedJsonBytes } from '../admission/json-limits.js';
import type { OwnerCallCommand } from '../owner-calls/owner-calls.js';
import {
  JobChangeAction,
  type AdmitJobRequest,
  type Caller,
  type ChangeJobRequest,
  type HandleOwnerCallRequest,
  type HandleBulkCallRequest,
  type HandleScheduleCallRequest,
  type SetRetentionPolicyRequest,
  type ListJobsRequest,
  type ReadJobChangesRequest,
  type ReadJobEventsRequest,
  type TransitionJobRequest,
  type WatchChangesRequest,
} from '@docket/proto/docket/state/v1/state_service_pb.js';
import { durationMs, validateJobSpecMessage } from '@docket/service-kit';
import type { Viewer } from '../db/queries/jobs.js';
import type { AdmitJobCommand } from '../admission/admit-jobs.js';
import type { ChangeJobCommand, JobChangeActionName } from '../owner-calls/change-job.js';
import type { IdempotentRequest } from '../admission/idempotent-mutation.js';
import type { ListJobsQuery } from '../reads/read-jobs.js';
import { retentionAges } from '../maintenance/retention.js';
import type { TransitionCommand } from '../transitions/transition-job.js';
import type { ChangeTickOptions } from '../feed/watch-job.js';

/** The shortest idempotency retention the state service accepts. */
export const MIN_IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

const OPERATION_PATTERN = /^docket\.[a-z]+\.v1\.[A-Za-z]+Service\/[A-Za-z]+$/;
const SNAPSHOT_PATTERN = /^\d{1,20}:\d{1,20}:(\d{1,20}(,\d{1,20})*)?$/;

/**
 * The state service's typed API checks everything it is handed, even from
 * trusted callers: a digest that is not 64 lowercase hex, a malformed key
 * or a bad spec is INVALID_ARGUMENT and nothing is written.
 */
export function parseAdmitJobRequest(request: AdmitJobRequest): AdmitJobCommand {
  const idempotent = parseIdempotentRequest(request);
  if (!request.spec) throw invalidField('spec', 'is required');
  return { ...idempotent, spec: validateJobSpecMessage(request.spec) };
}

/** An owner's cancel, pause or resume, bound like an admission. */
export function parseChangeJobRequest(request: ChangeJobRequest): ChangeJobCommand {
  const action = JobChangeAction[request.action] as JobChangeActionName | 'UNSPECIFIED' | undefined;
  if (action === undefined || action === 'UNSPECIFIED') throw invalidField('action', 'must be a job change action');
  return {
    request: parseIdempotentRequest(request),
    viewer: viewerOf(request.caller),
    jobId: parseJobId(request.jobId),
    expectedRevision: request.expectedRevision,
    action,
  };
}

/** Signal names: 1 to 128 characters of [A-Za-z0-9._:-]. */
const SIGNAL_NAME_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
/** The longest DecideApproval comment. */
const COMMENT_MAX = 4096;

/** DecideApproval, SendSignal or ReconcileSignals, bound like an admission. */
export function parseOwnerCall(request: HandleOwnerCallRequest): OwnerCallCommand {
  const idempotent = parseIdempotentRequest(request);
  const viewer = viewerOf(request.caller);
  const call = request.request;
  switch (call.case) {
    case 'decideApproval': {
      const decision = ApprovalDecision[call.value.decision] as string | undefined;
      if (decision !== 'ALLOW' && decision !== 'DENY') throw invalidField('decision', 'must be ALLOW or DENY');
      if (!isIdOf('apr', call.value.approvalId)) throw invalidField('approval_id', 'must be a Docket approval id');
      if (call.value.comment.length > COMMENT_MAX || call.value.comment.includes('\u0000')) throw invalidField('comment', 'must be at most 4096 characters');
      return {
        request: idempotent,
        viewer,
        call: { case: call.case, jobId: parseJobId(call.value.jobId), approvalId: call.value.approvalId, decision, comment: call.value.comment },
      };
    }
    case 'sendSignal': {
      if (!SIGNAL_NAME_PATTERN.test(call.value.name)) throw invalidField('name', 'must be 1 to 128 characters of [A-Za-z0-9._:-]');
      const payload = call.value.payload ?? {};
      checkedJsonBytes(payload, 'payload', 'eventPayloadBytes');
      return { request: idempotent, viewer, call: { case: call.case, jobId: parseJobId(call.value.jobId), name: call.value.name, payload } };
    }
    case 'reconcileSignals': {
      const action = SignalReconcileAction[call.value.action] as string | undefined;
      if (action !== 'REDELIVER' && action !== 'DISCARD') throw invalidField('action', 'must be REDELIVER or DISCARD');
      return { request: idempotent, viewer, call: { case: call.case, jobId: parseJobId(call.value.jobId), action } };
    }
    default:
      throw invalidField('request', 'must be set');
  }
}

/** The binding fields every idempotent state request carries, checked. */
export function parseIdempotentRequest(
  request: AdmitJobRequest | ChangeJobRequest | HandleOwnerCallRequest | HandleScheduleCallRequest | HandleBulkCallRequest,
): IdempotentRequest {
  const viewer = viewerOf(request.caller);
  if (!OPERATION_PATTERN.test(request.operation)) {
    throw invalidField('operation', 'must be a Docket RPC path without its leading slash');
  }
  const ttlMs = durationMs(request.idempotencyTtl);
  if (ttlMs === undefined || !Number.isInteger(ttlMs) || ttlMs < MIN_IDEMPOTENCY_TTL_MS) {
    throw invalidField('idempotency_ttl', 'must be a whole number of milliseconds, at least 24 hours');
  }
  return {
    subject: viewer.subject,
    operation: request.operation,
    key: parseIdempotencyKey(request.idempotencyKey),
    digest: parseRequestDigest(request.requestDigest),
    ttlMs,
  };
}

/** The viewer a public service acts for. */
export function viewerOf(caller: Caller | undefined): Viewer {
  if (!caller || caller.subject.length === 0 || caller.subject.length > 256) {
    throw invalidField('caller.subject', 'must be 1 to 256 characters');
  }
  return { subject: caller.subject, admin: caller.admin };
}

/** A job id's shape; a well-formed id that is not visible is NOT_FOUND later. */
export function parseJobId(jobId: string, field = 'job_id'): string {
  if (!isValidId(jobId)) throw invalidField(field, 'must be a Docket id');
  return jobId;
}

/** A listing page request. */
export function parseListJobsRequest(request: ListJobsRequest): ListJobsQuery {
  const viewer = viewerOf(request.caller);
  const pageSize = coerceListPageSize(request.pageSize);
  if (request.snapshot !== '' && !SNAPSHOT_PATTERN.test(request.snapshot)) {
    throw invalidField('snapshot', 'must be pg_snapshot text');
  }
  const after = request.after;
  if (after && (!after.createdAt || !isValidId(after.jobId))) {
    throw invalidField('after', 'must name a created_at and a job id');
  }
  if (after && request.snapshot === '') throw invalidField('snapshot', 'is required after the first page');
  if (request.parentJobId !== '' && !isValidId(request.parentJobId)) throw invalidField('parent_job_id', 'must be a Docket job id');
  return {
    viewer,
    statuses: request.statuses.map((status, index) => statusName(status, `statuses[${index}]`)),
    queue: request.queue,
    includeDeleted: request.includeDeleted,
    parentJobId: request.parentJobId,
    pageSize,
    snapshot: request.snapshot === '' ? undefined : request.snapshot,
    after: after?.createdAt ? { createdAt: timestampDate(after.createdAt), jobId: after.jobId } : undefined,
  };
}

/** The stored name of a JobStatus enum value; UNSPECIFIED or unknown is invalid. */
export function statusName(status: JobStatus, field: string): JobStatusName {
  const name = JobStatus[status] as string | undefined;
  if (name === undefined || !(JOB_STATUSES as readonly string[]).includes(name)) {
    throw invalidField(field, 'must be a job status');
  }
  return name as JobStatusName;
}

/** A transition request, checked (limits are checked by the domain). */
export function parseTransitionJobRequest(request: TransitionJobRequest): TransitionCommand {
  return {
    viewer: viewerOf(request.caller),
    jobId: parseJobId(request.jobId),
    expectedRevision: request.expectedRevision,
    toStatus: request.toStatus === JobStatus.UNSPECIFIED ? undefined : statusName(request.toStatus, 'to_status'),
    events: request.events.map((event) => ({
      type: event.type,
      payload: event.payload ?? {},
      ...(event.attemptId === '' ? {} : { attemptId: event.attemptId }),
      ...(event.fence === undefined ? {} : { fence: event.fence }),
    })),
  };
}

/** The most pages one ReadJobEvents answers at once (`page_count`). */
export const READ_PAGE_COUNT_MAX = 8;

/**
 * A journal read: the cursor must not be negative; page sizes per the
 * SPEC, and `page_count` pages of them at once (0 and 1 mean one, above
 * {@link READ_PAGE_COUNT_MAX} means that many).
 */
export function parseReadJobEventsRequest(request: ReadJobEventsRequest) {
  if (request.afterSequence < 0n) throw invalidField('after_sequence', 'must not be negative');
  if (request.pageCount < 0) throw invalidField('page_count', 'must not be negative');
  return {
    viewer: viewerOf(request.caller),
    jobId: parseJobId(request.jobId),
    afterSequence: request.afterSequence,
    pageSize: coerceEventPageSize(request.pageSize) * Math.min(Math.max(request.pageCount, 1), READ_PAGE_COUNT_MAX),
    encoded: request.encoded,
  };
}

/** A feed read: position, filter and a limit of 1 to 1000 entries. */
export function parseReadJobChangesRequest(request: ReadJobChangesRequest) {
  if (request.limit < 1 || request.limit > 1000) throw invalidField('limit', 'must be between 1 and 1000');
  return {
    viewer: viewerOf(request.caller),
    after: request.after ? { transactionId: request.after.transactionId, entryId: request.after.entryId } : undefined,
    filter: {
      statuses: (request.filter?.statuses ?? []).map((status, index) => statusName(status, `filter.statuses[${index}]`)),
      queue: request.filter?.queue ?? '',
    },
    limit: request.limit,
  };
}

/** The shortest heartbeat interval a WatchChanges reader may ask for. */
const HEARTBEAT_MIN_MS = 100;

/** WatchChanges options: whether ticks name jobs, and the heartbeat interval (at least 100 ms, at most a day). */
export function parseWatchChangesRequest(request: WatchChangesRequest): ChangeTickOptions {
  const heartbeatMs = durationMs(request.heartbeatInterval);
  if (heartbeatMs !== undefined && !(heartbeatMs >= HEARTBEAT_MIN_MS && heartbeatMs <= 86_400_000)) {
    throw invalidField('heartbeat_interval', 'must be between 100 ms and a day');
  }
  return { includeJobs: request.includeJobs, heartbeatMs };
}

/** A deletion id's shape; a well-formed id that is not visible is NOT_FOUND later. */
export function parseDeletionId(deletionId: string): string {
  if (!isIdOf('del', deletionId)) throw invalidField('deletion_id', 'must be a Docket deletion id');
  return deletionId;
}

/** The viewer of an admin-only call; anyone else is PERMISSION_DENIED. */
export function adminOf(caller: Caller | undefined): Viewer {
  const viewer = viewerOf(caller);
  if (!viewer.admin) throw new DocketError('PERMISSION_DENIED', 'this call needs the admin role');
  return viewer;
}

/** A SetRetentionPolicy request, checked (admin only). */
export function parseRetentionPolicy(request: SetRetentionPolicyRequest) {
  adminOf(request.caller);
  const policy = request.request?.policy;
  if (!policy || !isValidQueueName(policy.queue)) throw invalidField('policy.queue', 'must be a queue name');
  return { queue: policy.queue, ...retentionAges(policy, 'policy') };
}


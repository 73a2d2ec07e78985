import { create, type JsonObject } from '@bufbuild/protobuf';
import { isTerminal, notFound } from '@docket/contracts';
import {
  ExplainCode,
  ExplainJobResponseSchema,
  ExplainReasonSchema,
  type ExplainJobResponse,
  type ExplainReason,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { FeedPosition } from '../db/queries/job-changes.js';
import { JOBS_AHEAD_COUNTED, readJobClaimability, type JobClaimability } from '../db/queries/explain-job.js';
import type { Viewer } from '../db/queries/jobs.js';
import type { StatementTarget } from '../db/prepared-statement.js';
import { projectJob } from './job-projection.js';
import { pendingApprovalOf } from '../approvals/pending-approval.js';

/**
 * ExplainJob: the job the viewer may see (NOT_FOUND, identical for missing
 * and foreign) and why it is or is not running now, with the feed position
 * of the read's own snapshot (as GetJob's).
 */
export async function explainJob(
  db: StatementTarget,
  viewer: Viewer,
  jobId: string,
  leaseMs: number,
): Promise<{ response: ExplainJobResponse; feedPosition: FeedPosition }> {
  const found = await readJobClaimability(db, viewer, jobId, leaseMs);
  if (!found) throw notFound('job');
  return {
    response: create(ExplainJobResponseSchema, { job: projectJob(found.job), reasons: explainReasons(found) }),
    feedPosition: { transactionId: found.horizon, entryId: 0n },
  };
}

/**
 * The reasons, most decisive first (SPEC section 14): TERMINAL or RUNNING
 * alone; otherwise every blocker that applies, in precedence order, or
 * CLAIMABLE_NOW when none does; then the context (unresolved signals, no
 * live worker, jobs ahead). A quarantined job is JOB_PAUSED with the
 * quarantine in its details: like a paused job, it waits for a person.
 */
export function explainReasons(found: JobClaimability): ExplainReason[] {
  const { job, now, queue } = found;
  if (isTerminal(job.status) || job.lifecycle === 'HARD_DELETING' || job.lifecycle === 'HARD_DELETED') {
    return [reason(ExplainCode.TERMINAL, `the job ended ${job.status} at ${iso(job.updated_at)}`, { status: job.status, finished_at: iso(job.updated_at) })];
  }
  if (job.status === 'RUNNING' || job.status === 'CANCELLING') {
    const lease = job.lease_expires_at ? iso(job.lease_expires_at) : undefined;
    return [
      reason(ExplainCode.RUNNING, `attempt ${job.attempt_count} is ${job.status === 'RUNNING' ? 'running' : 'being cancelled'}${lease ? `; its lease ends at ${lease}` : ''}`, {
        status: job.status,
        attempt_number: job.attempt_count,
        ...(lease ? { lease_expires_at: lease } : {}),
      }),
    ];
  }
  const reasons: ExplainReason[] = [];
  const approval = job.status === 'PAUSED' ? pendingApprovalOf(job.pending_approval) : undefined;
  if (approval) {
    reasons.push(
      reason(ExplainCode.APPROVAL_PENDING, `waiting for a decision on approval ${approval.approval_id}, requested at ${iso(new Date(approval.requested_at))}`, {
        approval_id: approval.approval_id,
        requested_at: iso(new Date(approval.requested_at)),
      }),
    );
  }
  if (found.quarantine) {
    const { task, errorClass, since } = found.quarantine;
    reasons.push(
      reason(ExplainCode.JOB_PAUSED, `set aside since ${iso(since)} by the ${task} task (${errorClass}); an admin releases it`, {
        held_by: 'quarantine',
        task,
        error_class: errorClass,
        since: iso(since),
      }),
    );
  } else if (job.status === 'PAUSED' && !approval) {
    reasons.push(reason(ExplainCode.JOB_PAUSED, 'paused by its owner; ResumeJob queues it again', {}));
  }
  if (found.pendingParents.length > 0) {
    const pending = found.pendingParents;
    reasons.push(
      reason(ExplainCode.WAITING_FOR_PARENTS, `${pending.length} of its ${job.parent_ids.length} parents have not settled: ${pending.join(', ')}`, {
        pending_parents: [...pending],
        parent_count: job.parent_ids.length,
      }),
    );
  }
  if (job.status === 'QUEUED' && job.run_after && job.run_after > now) {
    reasons.push(reason(ExplainCode.RUN_AFTER, `not before ${iso(job.run_after)}`, { not_before: iso(job.run_after) }));
  }
  if (job.status === 'RETRY_WAIT') {
    const due = job.not_before ? iso(job.not_before) : iso(now);
    reasons.push(
      reason(ExplainCode.RETRY_BACKOFF, `attempt ${job.attempt_count} did not succeed; the next is due at ${due}`, {
        not_before: due,
        attempt_number: job.attempt_count,
      }),
    );
  }
  if (queue?.paused) reasons.push(reason(ExplainCode.QUEUE_PAUSED, `queue ${job.queue} is paused`, { queue: job.queue }));
  if (queue?.rate && queue.rate.tokens < 1) {
    const { jobs, perMs, tokens } = queue.rate;
    const nextTokenAt = iso(new Date(now.getTime() + Math.ceil(((1 - tokens) * perMs) / jobs)));
    reasons.push(
      reason(ExplainCode.RATE_LIMITED, `queue ${job.queue} allows ${jobs} claims per ${perMs / 1000} s; the next is allowed at ${nextTokenAt}`, {
        limit: jobs,
        per_seconds: perMs / 1000,
        tokens: Math.floor(tokens * 1000) / 1000,
        next_token_at: nextTokenAt,
      }),
    );
  }
  if (queue?.maxConcurrency !== undefined && queue.running !== undefined && queue.running >= queue.maxConcurrency) {
    reasons.push(
      reason(ExplainCode.QUEUE_CONCURRENCY_FULL, `queue ${job.queue} allows ${queue.maxConcurrency} running jobs and ${queue.running} are running`, {
        limit: queue.maxConcurrency,
        running: queue.running,
      }),
    );
  }
  if (queue?.perKeyConcurrency !== undefined && queue.keyRunning !== undefined && queue.keyRunning >= queue.perKeyConcurrency) {
    const key = job.concurrency_key;
    reasons.push(
      reason(
        ExplainCode.CONCURRENCY_KEY_FULL,
        `${key === null ? 'jobs without a concurrency key' : `concurrency key ${key}`} may run ${queue.perKeyConcurrency} at once and ${queue.keyRunning} are running`,
        { ...(key === null ? {} : { concurrency_key: key }), limit: queue.perKeyConcurrency, running: queue.keyRunning },
      ),
    );
  }
  if (reasons.length === 0) reasons.push(reason(ExplainCode.CLAIMABLE_NOW, `the next claim on queue ${job.queue} may take it`, {}));
  if (job.unknown_signals > 0) {
    reasons.push(
      reason(ExplainCode.SIGNALS_UNRESOLVED, `${job.unknown_signals} signals delivered to a lost attempt are UNKNOWN until ReconcileSignals`, {
        unknown_signals: job.unknown_signals,
      }),
    );
  }
  if (!found.liveWorker) reasons.push(reason(ExplainCode.NO_LIVE_WORKER, `no live worker is registered for queue ${job.queue}`, { queue: job.queue }));
  if (found.jobsAhead > 0) {
    const atLeast = found.jobsAhead > JOBS_AHEAD_COUNTED;
    const ahead = Math.min(found.jobsAhead, JOBS_AHEAD_COUNTED);
    reasons.push(
      reason(ExplainCode.AHEAD_IN_QUEUE, `${atLeast ? 'more than ' : ''}${ahead} claimable jobs of queue ${job.queue} come before it`, {
        jobs_ahead: ahead,
        at_least: atLeast,
      }),
    );
  }
  return reasons;
}

function reason(code: ExplainCode, message: string, details: JsonObject): ExplainReason {
  return create(ExplainReasonSchema, { code, message, details });
}

/** RFC 3339 in UTC. */
function iso(at: Date): string {
  return at.toISOString();
}

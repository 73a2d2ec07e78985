import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Kysely } from 'kysely';
import type { Logger } from '@docket/service-kit';
import { isDocketError, notFound } from '@docket/contracts';
import { JobSchema } from '@docket/proto/docket/common/v1/job_pb.js';
import { SignalSchema } from '@docket/proto/docket/common/v1/signal_pb.js';
import {
  DecideApprovalResponseSchema,
  ReconcileSignalsResponseSchema,
  SendSignalResponseSchema,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { HandleOwnerCallResponseSchema, type HandleOwnerCallResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { approvalSpent, type ApprovalHistory } from '../db/approval-history.js';
import type { Viewer } from '../db/queries/jobs.js';
import { insertSignal, moveSignalsIn, type SignalRow } from '../db/queries/signals.js';
import type { Database, JsonObject } from '../db/tables/index.js';
import { applyTransition } from '../transitions/apply-transition.js';
import type { JobTransition } from '../transitions/transition-plan.js';
import { storeIdempotently, type IdempotentRequest, type StoredOutcome } from '../admission/idempotent-mutation.js';
import { projectJob } from '../reads/job-projection.js';
import { markApprovalSpent } from '../approvals/mark-approval-spent.js';
import { pendingApprovalOf, type PendingApprovalRecord } from '../approvals/pending-approval.js';
import { inboxDisagrees, planReconcile, planSignal, projectSignal, type ReconcileActionName } from '../signals/signal-inbox.js';
import { lockJobForChange } from '../transitions/transition-job.js';

/** One owner call, checked (see `parseOwnerCall`). */
export type OwnerCall =
  | { readonly case: 'decideApproval'; readonly jobId: string; readonly approvalId: string; readonly decision: 'ALLOW' | 'DENY'; readonly comment: string }
  | { readonly case: 'sendSignal'; readonly jobId: string; readonly name: string; readonly payload: JsonObject }
  | { readonly case: 'reconcileSignals'; readonly jobId: string; readonly action: ReconcileActionName };

/** An owner call with its idempotency binding and who calls. */
export interface OwnerCallCommand {
  readonly request: IdempotentRequest;
  readonly viewer: Viewer;
  readonly call: OwnerCall;
}

/** What owner calls need beyond the job database. */
export interface OwnerCallDependencies {
  readonly db: Kysely<Database>;
  readonly approvals: ApprovalHistory;
  readonly logger: Logger;
}

/**
 * DecideApproval, SendSignal and ReconcileSignals, each with SubmitJob's
 * idempotency contract (the response stored with the change, replayed
 * verbatim). A job that is not the caller's is NOT_FOUND like a missing one.
 */
export async function handleOwnerCall(deps: OwnerCallDependencies, command: OwnerCallCommand): Promise<HandleOwnerCallResponse> {
  const { call } = command;
  /** The public response: the stored value, whether it is a replay, and how long the key is kept. */
  const stamped = <T>(outcome: { readonly replayed: boolean; readonly idempotencyExpiresAt: Date }, fields: T) => ({
    ...fields,
    replayed: outcome.replayed,
    idempotencyExpiresAt: timestampFromDate(outcome.idempotencyExpiresAt),
  });
  switch (call.case) {
    case 'decideApproval': {
      const outcome = await decideApproval(deps, command, call);
      return create(HandleOwnerCallResponseSchema, {
        response: { case: 'decideApproval', value: create(DecideApprovalResponseSchema, stamped(outcome, { job: outcome.value })) },
      });
    }
    case 'sendSignal': {
      const outcome = await storeIdempotently(deps.db, command.request, SignalSchema, async (tx, now) => {
        const job = await lockJobForChange(tx, command.viewer, call.jobId, undefined);
        const planned = planSignal(job, call.name);
        await applyTransition(tx, job, { events: planned.change.events, patch: planned.change.patch }, now);
        const row: SignalRow = {
          job_id: job.id,
          sequence: planned.sequence,
          name: call.name,
          payload: call.payload,
          state: 'PENDING',
          received_at: now,
          attempt_id: null,
          redelivered: false,
        };
        await insertSignal(tx, row);
        return { value: projectSignal(row), jobId: job.id };
      });
      return create(HandleOwnerCallResponseSchema, {
        response: { case: 'sendSignal', value: create(SendSignalResponseSchema, stamped(outcome, { signal: outcome.value })) },
      });
    }
    case 'reconcileSignals': {
      const outcome = await storeIdempotently(deps.db, command.request, JobSchema, async (tx, now) => {
        const job = await lockJobForChange(tx, command.viewer, call.jobId, undefined);
        const change = planReconcile(job, call.action);
        if (change.events.length === 0) return { value: projectJob(job), jobId: job.id };
        const applied = await applyTransition(tx, job, { events: change.events, patch: change.patch }, now);
        if (!(await moveSignalsIn(tx, change.moves))) throw inboxDisagrees();
        return { value: projectJob(applied.job), jobId: job.id };
      });
      return create(HandleOwnerCallResponseSchema, {
        response: { case: 'reconcileSignals', value: create(ReconcileSignalsResponseSchema, stamped(outcome, { job: outcome.value })) },
      });
    }
  }
}

/**
 * DecideApproval (SPEC section 7). Under the job's row lock: the approval
 * must be the one the job waits for (another is APPROVAL_SPENT when the
 * history has it, else NOT_FOUND). The decision's digest (the request
 * digest) is then burned in the approval history, which commits on its
 * own connections, and only then journaled as `approval.decided`: ALLOW
 * re-queues the job (the next claim resumes from its checkpoint under a
 * new fence), DENY fails it with class APPROVAL_DENIED. When anything
 * fails after the burn the digest stays burned (fail closed) and the job's
 * pending approval is marked spent, so a retry, with any key, is
 * APPROVAL_SPENT and never a second decision.
 */
async function decideApproval(
  deps: OwnerCallDependencies,
  command: OwnerCallCommand,
  call: Extract<OwnerCall, { case: 'decideApproval' }>,
): Promise<StoredOutcome<typeof JobSchema>> {
  let burned = false;
  try {
    return await storeIdempotently(deps.db, command.request, JobSchema, async (tx, now) => {
      const job = await lockJobForChange(tx, command.viewer, call.jobId, undefined);
      const pending = pendingApprovalOf(job.pending_approval);
      if (pending?.approval_id !== call.approvalId) {
        if (await deps.approvals.isSpent(call.approvalId)) throw approvalSpent();
        throw notFound('approval');
      }
      if (pending.spent === true) throw approvalSpent();
      await deps.approvals.burn({
        digest: command.request.digest,
        approval_id: call.approvalId,
        job_id: job.id,
        decision: call.decision,
        decided_by: command.request.subject,
      });
      burned = true;
      const decided = await applyTransition(tx, job, decisionTransition(pending, call, command.request.digest, now), now);
      return { value: projectJob(decided.job), jobId: job.id };
    });
  } catch (error) {
    const spent = isDocketError(error) && error.reason === 'APPROVAL_SPENT';
    if (burned || spent) await markApprovalSpent(deps.db, deps.logger, command.viewer, call.jobId, call.approvalId);
    throw error;
  }
}

function decisionTransition(
  pending: PendingApprovalRecord,
  call: Extract<OwnerCall, { case: 'decideApproval' }>,
  digest: string,
  now: Date,
): JobTransition {
  const decided = {
    type: 'approval.decided',
    payload: { approval_id: call.approvalId, decision: call.decision, digest, ...(call.comment ? { comment: call.comment } : {}) },
  };
  const last = { approval_id: call.approvalId, decision: call.decision, prompt: pending.prompt, details: pending.details, decided_at: now.toISOString() };
  if (call.decision === 'ALLOW') {
    return { toStatus: 'QUEUED', events: [decided], patch: { pending_approval: null, last_approval: last, pause_requested: false } };
  }
  return {
    toStatus: 'FAILED',
    events: [decided, { type: 'job.failed', payload: { failure_class: 'APPROVAL_DENIED' } }],
    patch: {
      pending_approval: null,
      last_approval: last,
      pause_requested: false,
      failure: { failure_class: 'APPROVAL_DENIED', message: 'the approval was denied', safe_details: {}, retryable: false },
    },
  };
}

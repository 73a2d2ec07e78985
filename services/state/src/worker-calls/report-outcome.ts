import { create } from '@bufbuild/protobuf';
import { invalidField, isWorkerFailureClass, type FailureClassName } from '@docket/contracts';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { ReportOutcomeRequestSchema, ReportOutcomeResponseSchema, type ReportOutcomeRequest } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { checkedJsonBytes } from '../admission/json-limits.js';
import type { AttemptEnding } from '../attempts/attempt-ending.js';
import { projectJob } from '../reads/job-projection.js';
import { attemptReport, type AttemptReport, type ReportRequest } from './attempt-report.js';
import { endAttempt } from './attempt-writes.js';

const REPORT_OUTCOME = { case: 'reportOutcome', rpc: 'ReportOutcome', requestSchema: ReportOutcomeRequestSchema, responseSchema: ReportOutcomeResponseSchema } as const;

/** The longest failure message, in characters. */
const FAILURE_MESSAGE_MAX = 4096;

/** ReportOutcome: the attempt ends (see `planAttemptEnding`) and the answer is the job as it leaves it. */
export function reportOutcome(subject: string, request: ReportRequest<'reportOutcome'>): AttemptReport {
  const ending = endingOf(request);
  return attemptReport(subject, REPORT_OUTCOME, request, (job, writes, now) => {
    return create(ReportOutcomeResponseSchema, { job: projectJob(endAttempt(writes, job, ending, now)) });
  });
}

function endingOf(request: ReportOutcomeRequest): AttemptEnding {
  const outcome = request.outcome;
  switch (outcome.case) {
    case 'success': {
      const result = outcome.value.result ?? {};
      checkedJsonBytes(result, 'success.result', 'resultBytes');
      return { kind: 'succeeded', result };
    }
    case 'failure': {
      const name = FailureClass[outcome.value.failureClass] as string | undefined;
      if (name === undefined || !isWorkerFailureClass(name)) {
        throw invalidField('failure.failure_class', 'must be a failure class a worker may report (not UNSPECIFIED, CANCELLED, LOST_ATTEMPT or APPROVAL_DENIED)');
      }
      if (outcome.value.message.length > FAILURE_MESSAGE_MAX) throw invalidField('failure.message', `must be at most ${FAILURE_MESSAGE_MAX} characters`);
      const safeDetails = outcome.value.safeDetails ?? {};
      checkedJsonBytes(safeDetails, 'failure.safe_details', 'eventPayloadBytes');
      return { kind: 'failed', failureClass: name as FailureClassName, message: outcome.value.message, safeDetails };
    }
    case 'cancelled':
      return { kind: 'cancelled' };
    case 'paused':
      return { kind: 'paused' };
    default:
      throw invalidField('outcome', 'must be one of success, failure, cancelled or paused');
  }
}

import type { HandleWorkerCallRequest } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { ackSignals } from './ack-signals.js';
import { advanceEffect } from './advance-effect.js';
import { appendEvents } from './append-events.js';
import type { AttemptReport, AttemptReportCase, ReportRequest } from './attempt-report.js';
import { beginEffect } from './begin-effect.js';
import { renewAttempt } from './renew-attempt.js';
import { reportOutcome } from './report-outcome.js';
import { reportProgress } from './report-progress.js';
import { requestApproval } from './request-approval.js';
import { saveCheckpoint } from './save-checkpoint.js';

/**
 * The attempt-scoped worker calls, each decided by its own file: it checks
 * the request's fields and limits (before anything is read) and returns the
 * {@link AttemptReport} that `decideAttemptReports` applies to the job under
 * its row lock, after the fence and incarnation are checked.
 */
const ATTEMPT_REPORTS: { readonly [Case in AttemptReportCase]: (subject: string, request: ReportRequest<Case>) => AttemptReport } = {
  renewAttempt,
  reportProgress,
  saveCheckpoint,
  appendEvents,
  reportOutcome,
  ackSignals,
  requestApproval,
  beginEffect,
  advanceEffect,
};

type ReportCall = Extract<HandleWorkerCallRequest['request'], { case: AttemptReportCase }>;

/** Checks an attempt-scoped call and turns it into an {@link AttemptReport}. */
export function parseAttemptReport(subject: string, call: ReportCall): AttemptReport {
  const parse = ATTEMPT_REPORTS[call.case] as (subject: string, request: ReportCall['value']) => AttemptReport;
  return parse(subject, call.value);
}

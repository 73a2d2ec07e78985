import { create } from '@bufbuild/protobuf';
import { invalidField } from '@docket/contracts';
import { ReportProgressRequestSchema, ReportProgressResponseSchema } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { attemptReport, type AttemptReport, type ReportRequest } from './attempt-report.js';

const REPORT_PROGRESS = { case: 'reportProgress', rpc: 'ReportProgress', requestSchema: ReportProgressRequestSchema, responseSchema: ReportProgressResponseSchema } as const;

/** The longest progress message, in characters. */
const PROGRESS_MESSAGE_MAX = 1024;

/**
 * ReportProgress: the latest progress is kept on the job (current authority
 * only; not a journal event, no revision change) and announced live.
 */
export function reportProgress(subject: string, request: ReportRequest<'reportProgress'>): AttemptReport {
  const progress = request.progress;
  if (!progress || progress.completedUnits < 0n || progress.totalUnits < 0n) {
    throw invalidField('progress', 'must have non-negative completed_units and total_units');
  }
  if (progress.message.length > PROGRESS_MESSAGE_MAX) throw invalidField('progress.message', `must be at most ${PROGRESS_MESSAGE_MAX} characters`);
  return attemptReport(subject, REPORT_PROGRESS, request, (job, writes, now) => {
    const stored = {
      completed_units: progress.completedUnits.toString(),
      total_units: progress.totalUnits.toString(),
      message: progress.message,
      updated_at: now.toISOString(),
    };
    const updated = { ...job, progress: stored };
    writes.update(updated);
    writes.announceProgress(updated, stored);
    return create(ReportProgressResponseSchema, { cancelRequested: job.status === 'CANCELLING', pauseRequested: job.pause_requested });
  });
}

import { isJobStatusName, isTerminal } from '@docket/contracts';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';

/** Whether a wire status is one a job never leaves (SUCCEEDED, FAILED, CANCELLED, INTERRUPTED). */
export function isTerminalStatus(status: JobStatus): boolean {
  const name = JobStatus[status];
  return isJobStatusName(name) && isTerminal(name);
}

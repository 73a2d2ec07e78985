import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { JobLifecycle, JobStatus } from '@docket/client';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import type { Progress } from '@docket/proto/docket/common/v1/progress_pb.js';
import { JOB_STATUSES } from '@docket/contracts';
import { UsageError } from './command.js';

/** `QUEUED` for `JobStatus.QUEUED`: a status as the CLI prints it (the proto name without its prefix). */
export function statusName(status: JobStatus): string {
  return JobStatus[status] ?? String(status);
}

/**
 * The status a user names (`failed`, `FAILED` or `JOB_STATUS_FAILED`);
 * a UsageError listing the valid names for anything else.
 */
export function parseStatusName(name: string): JobStatus {
  const bare = name.toUpperCase().replace(/^JOB_STATUS_/, '');
  const status = (JobStatus as unknown as Record<string, JobStatus | string>)[bare];
  if (typeof status !== 'number' || status === JobStatus.UNSPECIFIED) {
    const names = JOB_STATUSES.map((short) => JobStatus[short]);
    throw new UsageError(`--status must be one of ${names.map(statusName).join(', ')} (got "${name}")`);
  }
  return status;
}

/** An ISO-8601 time, or `unknown` for an absent timestamp. */
export function formatTime(timestamp: Timestamp | undefined): string {
  return timestamp ? timestampDate(timestamp).toISOString() : 'unknown';
}

/** `3/10` (or `3` with an unknown total), then the progress message in quotes when there is one. */
export function formatProgress(progress: Progress): string {
  const units = progress.totalUnits > 0n ? `${progress.completedUnits}/${progress.totalUnits}` : String(progress.completedUnits);
  return progress.message === '' ? units : `${units} ${JSON.stringify(progress.message)}`;
}

/**
 * The job as `docket get` prints it: a headline with its status, then one
 * indented line per fact that applies. Always: queue, lifecycle, attempts,
 * created and updated times, revision and latest sequence. When present:
 * label, priority, progress, failure, pending approval, result, unresolved
 * signals, legal hold and deletion.
 */
export function formatJob(job: Job): string {
  const lines = [`job ${job.id}: ${statusName(job.status)}`];
  const fact = (name: string, value: string): void => {
    lines.push(`  ${`${name}:`.padEnd(13)}${value}`);
  };
  fact('queue', job.queue || 'unknown');
  if (job.label !== '') fact('label', JSON.stringify(job.label));
  if (job.priority !== 0) fact('priority', String(job.priority));
  fact('lifecycle', JobLifecycle[job.lifecycle] ?? String(job.lifecycle));
  fact('attempts', job.maxAttempts > 0 ? `${job.attemptCount} of ${job.maxAttempts}` : String(job.attemptCount));
  if (job.progress) fact('progress', formatProgress(job.progress));
  if (job.failure) {
    const failureClass = FailureClass[job.failure.failureClass] ?? String(job.failure.failureClass);
    const retryable = job.failure.retryable ? ' (retryable)' : '';
    fact('failure', `${failureClass}${retryable}${job.failure.message === '' ? '' : `: ${job.failure.message}`}`);
  }
  if (job.pendingApproval) {
    const approval = job.pendingApproval;
    const prompt = approval.prompt === '' ? '' : ` ${JSON.stringify(approval.prompt)}`;
    const spent = approval.spent ? ' (spent: it can no longer be decided; cancel the job)' : '';
    fact('approval', `${approval.approvalId}${prompt}, requested ${formatTime(approval.requestedAt)}${spent}`);
  }
  if (job.result) fact('result', JSON.stringify(job.result));
  if (job.unresolvedSignals > 0) fact('signals', `${job.unresolvedSignals} UNKNOWN (docket signals reconcile)`);
  if (job.legalHold) fact('legal hold', 'on');
  if (job.deletionId !== '') fact('deletion', job.deletionId);
  fact('created', formatTime(job.createdAt));
  fact('updated', formatTime(job.updatedAt));
  fact('revision', `${job.revision}, latest event ${job.latestSequence}`);
  return `${lines.join('\n')}\n`;
}

const TABLE_HEADINGS = ['ID', 'STATUS', 'QUEUE', 'ATTEMPTS', 'UPDATED'] as const;

/**
 * Jobs as the `docket list` table: a heading line, then one line per job
 * (id, status, queue, attempts, updated), columns padded to their widest
 * cell. No jobs: the heading alone.
 */
export function formatJobTable(jobs: readonly Job[]): string {
  const rows = [
    [...TABLE_HEADINGS],
    ...jobs.map((job) => [
      job.id,
      statusName(job.status),
      job.queue,
      job.maxAttempts > 0 ? `${job.attemptCount}/${job.maxAttempts}` : String(job.attemptCount),
      formatTime(job.updatedAt),
    ]),
  ];
  const widths = TABLE_HEADINGS.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => `${row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ')}\n`).join('');
}

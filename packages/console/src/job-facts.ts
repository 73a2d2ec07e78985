import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { JobStatus } from '@docket/client';
import type { Event } from '@docket/proto/docket/common/v1/event_pb.js';
import type { Progress } from '@docket/proto/docket/common/v1/progress_pb.js';

/** The statuses a person filters by, in the SPEC's order. */
export const STATUS_CHOICES: readonly JobStatus[] = [
  JobStatus.WAITING,
  JobStatus.QUEUED,
  JobStatus.RUNNING,
  JobStatus.PAUSED,
  JobStatus.RETRY_WAIT,
  JobStatus.CANCELLING,
  JobStatus.SUCCEEDED,
  JobStatus.FAILED,
  JobStatus.CANCELLED,
  JobStatus.INTERRUPTED,
];

/** `QUEUED`, `RUNNING`, ...: the SPEC's short name of a status. */
export function statusName(status: JobStatus): string {
  return JobStatus[status] ?? 'UNSPECIFIED';
}

/** A progress as a fraction from 0 to 1, or `undefined` when it has no total. */
export function progressFraction(progress: Progress | undefined): number | undefined {
  if (progress === undefined || progress.totalUnits <= 0n) return undefined;
  const fraction = Number(progress.completedUnits) / Number(progress.totalUnits);
  return Math.min(1, Math.max(0, fraction));
}

/** `completed/total message`, for a progress bar's label. */
export function progressText(progress: Progress | undefined): string {
  if (progress === undefined) return 'no progress reported';
  const units = progress.totalUnits > 0n ? `${progress.completedUnits}/${progress.totalUnits}` : `${progress.completedUnits}`;
  return progress.message === '' ? units : `${units} ${progress.message}`;
}

/** A timestamp as local date and time, or a dash. */
export function formatTime(timestamp: Timestamp | undefined): string {
  return timestamp === undefined ? '-' : timestampDate(timestamp).toLocaleString();
}

/** An age in words: `42 s`, `5 min`, `3 h`, `2 d`. */
export function formatAge(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7_200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.round(seconds / 3_600)} h`;
  return `${Math.round(seconds / 86_400)} d`;
}

/** One attempt of a job as its journal records it. */
export interface AttemptRecord {
  readonly attemptId: string;
  /** The attempt's fence: strictly higher with every claim of the job. */
  readonly fence: bigint | undefined;
  readonly startedAt: Timestamp | undefined;
  /** The last journal event written under this attempt (`job.succeeded`, `attempt.lost`, `job.paused`, ...). */
  readonly lastEvent: string;
}

/**
 * The job's attempts, in the order they started, from its journal: every
 * event that names an attempt (`attempt.started` and what that attempt
 * wrote after) with the fence it carried.
 */
export function attemptsOf(events: readonly Event[]): AttemptRecord[] {
  const byId = new Map<string, { attemptId: string; fence: bigint | undefined; startedAt: Timestamp | undefined; lastEvent: string }>();
  for (const event of events) {
    if (event.attemptId === '') continue;
    const known = byId.get(event.attemptId);
    if (known === undefined) {
      byId.set(event.attemptId, { attemptId: event.attemptId, fence: event.fence, startedAt: event.occurredAt, lastEvent: event.type });
    } else {
      known.lastEvent = event.type;
      known.fence ??= event.fence;
    }
  }
  return [...byId.values()];
}

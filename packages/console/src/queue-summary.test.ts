import { create } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { describe, expect, it } from 'vitest';
import { JobStatus } from '@docket/client';
import { JobSchema } from '@docket/proto/docket/common/v1/job_pb.js';
import { summariseQueues } from './queue-summary.js';

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);

function job(queue: string, status: JobStatus, createdAgoMs: number, attempt = false) {
  return create(JobSchema, {
    id: `job_${queue}${status}${createdAgoMs}`.padEnd(12, '0'),
    queue,
    status,
    createdAt: timestampFromMs(NOW - createdAgoMs),
    ...(attempt ? { authoritativeAttempt: { attemptId: 'att_x0000000', fence: 1n } } : {}),
  });
}

describe('summariseQueues', () => {
  it('counts by status, running attempts and the oldest queued age, per queue in name order', () => {
    const summaries = summariseQueues(
      [
        job('b', JobStatus.QUEUED, 5_000),
        job('b', JobStatus.QUEUED, 60_000),
        job('b', JobStatus.RUNNING, 1_000, true),
        job('b', JobStatus.CANCELLING, 1_000, true),
        job('b', JobStatus.SUCCEEDED, 90_000),
        job('a', JobStatus.PAUSED, 1_000),
      ],
      NOW,
    );
    expect(summaries.map((s) => s.queue)).toEqual(['a', 'b']);
    const [a, b] = summaries;
    expect(a).toMatchObject({ total: 1, runningAttempts: 0, oldestQueuedAgeMs: undefined });
    expect(b).toMatchObject({ total: 5, runningAttempts: 2, oldestQueuedAgeMs: 60_000 });
    expect(Object.fromEntries(b!.byStatus)).toEqual({ [JobStatus.QUEUED]: 2, [JobStatus.RUNNING]: 1, [JobStatus.CANCELLING]: 1, [JobStatus.SUCCEEDED]: 1 });
  });

  it('is empty for no jobs', () => {
    expect(summariseQueues([], NOW)).toEqual([]);
  });
});

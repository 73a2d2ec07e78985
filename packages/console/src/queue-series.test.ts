import { create } from '@bufbuild/protobuf';
import { durationFromMs, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { describe, expect, it } from 'vitest';
import { GetQueueStatsResponseSchema } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { queueSeries } from './queue-series.js';

describe('queueSeries', () => {
  it('derives the depth backwards from the QUEUED count now, and leaves latency gaps where nothing was claimed', () => {
    const start = Date.UTC(2026, 11, 6, 12, 0);
    const stats = create(GetQueueStatsResponseSchema, {
      counts: [{ status: JobStatus.QUEUED, jobs: 5n }],
      buckets: [
        { startTime: timestampFromDate(new Date(start)), admitted: 10n, claimed: 2n },
        { startTime: timestampFromDate(new Date(start + 60_000)), admitted: 0n, claimed: 4n, succeeded: 3n, pickupLatencyP50: durationFromMs(12), pickupLatencyP99: durationFromMs(40) },
        { startTime: timestampFromDate(new Date(start + 120_000)), admitted: 1n, claimed: 0n, failed: 1n },
      ],
    });
    const series = queueSeries(stats);
    expect(series.times).toEqual([start / 1000, start / 1000 + 60, start / 1000 + 120]);
    // End of the last bucket: 5 now; before it one was admitted (4); before that 4 were claimed (8).
    expect(series.queued).toEqual([8, 4, 5]);
    expect([series.admitted, series.claimed, series.succeeded, series.failed]).toEqual([
      [10, 0, 1],
      [2, 4, 0],
      [0, 3, 0],
      [0, 0, 1],
    ]);
    expect([series.pickupP50, series.pickupP99]).toEqual([
      [null, 12, null],
      [null, 40, null],
    ]);
  });
});

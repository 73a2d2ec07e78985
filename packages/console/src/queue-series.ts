import { durationMs, timestampDate } from '@bufbuild/protobuf/wkt';
import type { GetQueueStatsResponse } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';

/** A queue's buckets as chart series: x in seconds, values per bucket (null where there is none). */
export interface QueueSeries {
  /** Bucket start times, Unix seconds. */
  readonly times: number[];
  /** QUEUED jobs at the end of each bucket, derived (see {@link queueSeries}). */
  readonly queued: number[];
  readonly admitted: number[];
  readonly claimed: number[];
  readonly succeeded: number[];
  readonly failed: number[];
  /** Pickup latency p50 and p99 in ms; null for a bucket without claims. */
  readonly pickupP50: (number | null)[];
  readonly pickupP99: (number | null)[];
}

/** How many jobs of `status` the answer counts. */
export function countOf(stats: GetQueueStatsResponse, status: JobStatus): number {
  return Number(stats.counts.find((count) => count.status === status)?.jobs ?? 0n);
}

/**
 * The answer's buckets as series. The depth is derived backwards from the
 * QUEUED count now: at the end of a bucket, the jobs queued now less those
 * admitted after it plus those claimed after it (never below 0). It leaves
 * out what moved without an admission or a claim (a cancel, a pause, a
 * retry coming due), so it is an outline of the backlog, not a count.
 */
export function queueSeries(stats: GetQueueStatsResponse): QueueSeries {
  const buckets = stats.buckets;
  const queued: number[] = new Array<number>(buckets.length).fill(0);
  let depth = countOf(stats, JobStatus.QUEUED);
  for (let index = buckets.length - 1; index >= 0; index -= 1) {
    queued[index] = Math.max(0, depth);
    const bucket = buckets[index]!;
    depth = depth - Number(bucket.admitted) + Number(bucket.claimed);
  }
  const ms = (value: Parameters<typeof durationMs>[0] | undefined) => (value === undefined ? null : durationMs(value));
  return {
    times: buckets.map((bucket) => (bucket.startTime ? timestampDate(bucket.startTime).getTime() / 1000 : 0)),
    queued,
    admitted: buckets.map((bucket) => Number(bucket.admitted)),
    claimed: buckets.map((bucket) => Number(bucket.claimed)),
    succeeded: buckets.map((bucket) => Number(bucket.succeeded)),
    failed: buckets.map((bucket) => Number(bucket.failed)),
    pickupP50: buckets.map((bucket) => ms(bucket.pickupLatencyP50)),
    pickupP99: buckets.map((bucket) => ms(bucket.pickupLatencyP99)),
  };
}

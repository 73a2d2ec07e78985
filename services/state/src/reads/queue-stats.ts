import { create } from '@bufbuild/protobuf';
import { durationFromMs, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Kysely } from 'kysely';
import { invalidField, isValidQueueName, type JobStatusName } from '@docket/contracts';
import {
  GetQueueStatsResponseSchema,
  QueueStatsBucketSchema,
  type GetQueueStatsRequest,
  type GetQueueStatsResponse,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { durationMs } from '@docket/service-kit';
import { LATENCY_CLASSES_PER_DOUBLING, readOldestQueuedMs, readQueueActivity, readQueueCounts } from '../db/queries/queue-stats.js';
import type { Database } from '../db/tables/index.js';

/** GetQueueStats' window and buckets (SPEC section 14; docs/operators.md). */
export const QUEUE_STATS_BOUNDS = {
  defaultWindowMs: 3_600_000,
  maxWindowMs: 7 * 86_400_000,
  defaultBucketMs: 60_000,
  maxBuckets: 1_440,
} as const;

/** A checked GetQueueStats request. */
export interface QueueStatsQuery {
  readonly queue: string;
  readonly bucketMs: number;
  readonly bucketCount: number;
}

/** Checks a GetQueueStats request (INVALID_FIELD naming the field) before anything is read. */
export function parseQueueStatsRequest(request: GetQueueStatsRequest | undefined): QueueStatsQuery {
  if (!request || !isValidQueueName(request.queue)) throw invalidField('queue', 'must match ^[a-z0-9][a-z0-9._-]{0,127}$');
  const windowMs = request.window ? durationMs(request.window) : QUEUE_STATS_BOUNDS.defaultWindowMs;
  const bucketMs = request.bucket ? durationMs(request.bucket) : QUEUE_STATS_BOUNDS.defaultBucketMs;
  if (bucketMs === undefined || bucketMs < 60_000 || bucketMs % 60_000 !== 0) throw invalidField('bucket', 'must be a whole number of minutes');
  if (windowMs === undefined || windowMs < bucketMs || windowMs > QUEUE_STATS_BOUNDS.maxWindowMs) {
    throw invalidField('window', 'must be at least one bucket and at most 7 days');
  }
  const bucketCount = Math.ceil(windowMs / bucketMs);
  if (bucketCount > QUEUE_STATS_BOUNDS.maxBuckets) throw invalidField('bucket', `must make at most ${QUEUE_STATS_BOUNDS.maxBuckets} buckets of the window`);
  return { queue: request.queue, bucketMs, bucketCount };
}

/**
 * GetQueueStats: the queue's jobs by status, its oldest queued job's age,
 * and its activity bucket by bucket, in one REPEATABLE READ snapshot, from
 * the counters the jobs table's triggers maintain (migration 0011).
 */
export async function readQueueStats(db: Kysely<Database>, query: QueueStatsQuery): Promise<GetQueueStatsResponse> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (tx) => {
      const counts = await readQueueCounts(tx, query.queue);
      const oldestQueuedMs = await readOldestQueuedMs(tx, query.queue);
      const buckets = await readQueueActivity(tx, query.queue, query.bucketMs, query.bucketCount);
      return create(GetQueueStatsResponseSchema, {
        counts: statusCounts(counts),
        oldestQueuedAge: oldestQueuedMs === undefined ? undefined : durationFromMs(Math.round(oldestQueuedMs)),
        buckets: buckets.map((bucket) => {
          const p50 = latencyPercentile(bucket.pickups, 0.5);
          const p99 = latencyPercentile(bucket.pickups, 0.99);
          return create(QueueStatsBucketSchema, {
            startTime: timestampFromDate(bucket.start),
            admitted: bucket.admitted,
            claimed: bucket.claimed,
            succeeded: bucket.succeeded,
            failed: bucket.failed,
            pickupLatencyP50: p50 === undefined ? undefined : durationFromMs(p50),
            pickupLatencyP99: p99 === undefined ? undefined : durationFromMs(p99),
          });
        }),
      });
    });
}

/** Counts by status name as the wire's QueueStatusCount list, in status order. */
export function statusCounts(counts: ReadonlyMap<string, bigint>): { status: JobStatus; jobs: bigint }[] {
  return [...counts].map(([status, jobs]) => ({ status: JobStatus[status as JobStatusName], jobs })).sort((a, b) => a.status - b.status);
}

/**
 * The `quantile` of a histogram of pickup latency classes, in ms: the upper
 * bound of the class holding the claim of rank ceil(quantile x claims)
 * (class c holds latencies up to 2^(c/8) ms); undefined without claims.
 */
export function latencyPercentile(classes: ReadonlyMap<number, number>, quantile: number): number | undefined {
  const total = [...classes.values()].reduce((sum, claims) => sum + claims, 0);
  if (total === 0) return undefined;
  const rank = Math.max(1, Math.ceil(quantile * total));
  let seen = 0;
  for (const latencyClass of [...classes.keys()].sort((a, b) => a - b)) {
    seen += classes.get(latencyClass) ?? 0;
    if (seen >= rank) return Math.round(2 ** (latencyClass / LATENCY_CLASSES_PER_DOUBLING) * 1000) / 1000;
  }
  return undefined;
}

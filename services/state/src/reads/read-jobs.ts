import { toBinary } from '@bufbuild/protobuf';
import type { Kysely } from 'kysely';
import { LIMITS, notFound, type JobStatusName } from '@docket/contracts';
import { JobSchema, type Job } from '@docket/proto/docket/common/v1/job_pb.js';
import type { Database } from '../db/tables/index.js';
import { currentSnapshot } from '../db/queries/clock.js';
import type { FeedPosition } from '../db/queries/job-changes.js';
import { listVisibleJobs, type JobListing, type Viewer } from '../db/queries/jobs.js';
import { findVisibleJobAtHorizon } from '../db/queries/visible-job.js';
import { projectJob } from './job-projection.js';

/**
 * A job the viewer may see (NOT_FOUND, identical for missing and foreign),
 * with the feed position of the read's own snapshot: every change not
 * reflected in the job lies after it.
 */
export async function getJob(
  db: Kysely<Database>,
  viewer: Viewer,
  jobId: string,
): Promise<{ job: Job; feedPosition: FeedPosition }> {
  const { row, horizon } = await findVisibleJobAtHorizon(db, viewer, jobId);
  if (!row) throw notFound('job');
  return { job: projectJob(row), feedPosition: { transactionId: horizon, entryId: 0n } };
}

/** One page of a listing request. */
export interface ListJobsQuery {
  readonly viewer: Viewer;
  readonly statuses: readonly JobStatusName[];
  readonly queue: string;
  readonly includeDeleted: boolean;
  /** Only the children of this job ('' for all). */
  readonly parentJobId: string;
  readonly pageSize: number;
  /** The first page's snapshot; undefined to take one now. */
  readonly snapshot: string | undefined;
  readonly after: JobListing['after'];
}

/** A page, the snapshot it is bound to, and whether more jobs follow. */
export interface JobPage {
  readonly jobs: Job[];
  readonly snapshot: string;
  readonly hasMore: boolean;
  /** The snapshot's xmin as a feed position: no later change lies before it. */
  readonly feedPosition: FeedPosition;
}

/**
 * Lists jobs newest first, bound to one MVCC snapshot. A first page takes
 * the snapshot and reads in the same REPEATABLE READ transaction; later
 * pages filter by it, so a job committed after the first page never
 * appears, and keyset positions make pages disjoint and gapless.
 *
 * A page also stops before `pageSize` once its jobs would exceed
 * {@link LIMITS}.listPageBytes of encoded protobuf (large inputs, results),
 * with `hasMore` set; it always holds at least one job. The next page
 * continues after the last job returned, so the keyset is unchanged.
 */
export async function listJobs(db: Kysely<Database>, query: ListJobsQuery): Promise<JobPage> {
  const read = async (tx: Kysely<Database>, snapshot: string): Promise<JobPage> => {
    const rows = await listVisibleJobs(tx, { ...query, snapshot, limit: query.pageSize + 1 });
    const jobs = withinPageBudget(rows.slice(0, query.pageSize).map(projectJob));
    return {
      jobs,
      snapshot,
      hasMore: rows.length > jobs.length,
      feedPosition: { transactionId: BigInt(snapshot.split(':')[0] ?? '0'), entryId: 0n },
    };
  };
  if (query.snapshot !== undefined) return read(db, query.snapshot);
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (tx) => read(tx, await currentSnapshot(tx)));
}

/** The longest prefix of `jobs` within {@link LIMITS}.listPageBytes of encoded protobuf, never empty when `jobs` is not. */
function withinPageBudget(jobs: Job[]): Job[] {
  let bytes = 0;
  for (const [index, job] of jobs.entries()) {
    bytes += toBinary(JobSchema, job).byteLength;
    if (bytes > LIMITS.listPageBytes && index > 0) return jobs.slice(0, index);
  }
  return jobs;
}

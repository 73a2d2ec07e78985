import type { Kysely } from 'kysely';
import { DocketError } from '@docket/contracts';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import type { Viewer } from '../db/queries/jobs.js';
import type { Database } from '../db/tables/index.js';
import { applyTransition } from '../transitions/apply-transition.js';
import { projectJob } from '../reads/job-projection.js';
import { lockJobForChange } from '../transitions/transition-job.js';
import { transactionNow } from '../db/queries/clock.js';

/**
 * SetLegalHold (admins only; the admission service checks the role): places
 * or releases a job's hold, journaled as `job.legal_hold {held}`. Setting
 * what is already set changes nothing. A job whose hard deletion started
 * can no longer be held (ILLEGAL_TRANSITION).
 */
export async function setLegalHold(db: Kysely<Database>, viewer: Viewer, jobId: string, held: boolean): Promise<Job> {
  return db.transaction().execute(async (tx) => {
    const job = await lockJobForChange(tx, viewer, jobId, undefined);
    if (job.legal_hold === held) return projectJob(job);
    if (job.lifecycle === 'HARD_DELETING' || job.lifecycle === 'HARD_DELETED') {
      throw new DocketError('ILLEGAL_TRANSITION', 'a job whose hard deletion started cannot be held', { metadata: { from: job.lifecycle } });
    }
    const applied = await applyTransition(tx, job, { events: [{ type: 'job.legal_hold', payload: { held, by: viewer.subject } }], patch: { legal_hold: held } }, await transactionNow(tx));
    return projectJob(applied.job);
  });
}

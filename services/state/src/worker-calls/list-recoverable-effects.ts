import { create } from '@bufbuild/protobuf';
import type { Kysely } from 'kysely';
import { LIMITS, invalidField, limitExceeded } from '@docket/contracts';
import {
  ListRecoverableEffectsResponseSchema,
  type ListRecoverableEffectsRequest,
  type ListRecoverableEffectsResponse,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { transactionNow } from '../db/queries/clock.js';
import { listUnfinishedEffects } from '../db/queries/effects.js';
import { findJobByCurrentAttempt } from '../db/queries/jobs.js';
import { findIncarnation } from '../db/queries/workers.js';
import type { Database } from '../db/tables/index.js';
import { checkAuthority } from '../attempts/attempt-authority.js';
import { projectEffect } from '../effects/effect-lifecycle.js';

/**
 * ListRecoverableEffects: the job's effects that are not COMMITTED, oldest
 * first, for its current attempt only (STALE_INCARNATION,
 * STALE_AUTHORITY as every worker call; leases by the database clock).
 * Read-only, in one REPEATABLE READ snapshot, so the authority checked and
 * the effects listed agree. `limit` 0 means 256; above 256 is
 * LIMIT_EXCEEDED.
 */
export async function listRecoverableEffects(
  db: Kysely<Database>,
  subject: string,
  request: ListRecoverableEffectsRequest,
): Promise<ListRecoverableEffectsResponse> {
  if (request.limit < 0) throw invalidField('limit', 'must not be negative');
  if (request.limit > LIMITS.recoverableEffectsPage) throw limitExceeded('recoverableEffectsPage', 'limit');
  const limit = request.limit === 0 ? LIMITS.recoverableEffectsPage : request.limit;
  const ref = request.attempt;
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (tx) => {
      const now = await transactionNow(tx);
      const incarnation = ref ? await findIncarnation(tx, subject, ref.workerIncarnation) : undefined;
      const job = ref ? await findJobByCurrentAttempt(tx, ref.attemptId) : undefined;
      const held = checkAuthority(incarnation, ref, job, now);
      const effects = await listUnfinishedEffects(tx, held.id, limit);
      return create(ListRecoverableEffectsResponseSchema, { effects: effects.map(projectEffect) });
    });
}

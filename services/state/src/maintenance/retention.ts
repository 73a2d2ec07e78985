import { create } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import type { Kysely } from 'kysely';
import { invalidField } from '@docket/contracts';
import { durationMs } from '@docket/service-kit';
import { RetentionPolicySchema, type RetentionPolicy } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { transactionNow } from '../db/queries/clock.js';
import { deleteFeedEntriesOlderThan, lockJobPastRetention, removeRetentionPolicy, retentionPolicies, storeRetentionPolicy } from '../db/queries/retention.js';
import type { Database } from '../db/tables/index.js';
import { applyTransition } from '../transitions/apply-transition.js';
import { planChange } from '../owner-calls/change-job.js';
import { startHardDeletion } from '../owner-calls/hard-delete-job.js';
import type { MaintenanceStep } from './maintenance-step.js';
import { isolatingJob, type QuarantineDependencies } from '../journal/job-quarantine.js';

/**
 * One step of retention (SPEC section 8): for every queue with a policy,
 * ended ACTIVE jobs whose last change is older than `soft_delete_after` are
 * soft-deleted (`job.soft_deleted {requested_by: retention}`), and
 * SOFT_DELETED jobs whose soft deletion is older than `hard_delete_after`
 * get a hard deletion (HARD_DELETING and a deletion operation). Ages are
 * judged by the database clock. Jobs under legal hold are never taken.
 * Each job is its own transaction, taken with SKIP LOCKED; at most `limit`
 * jobs per step. A job that fails for a reason of its own is quarantined
 * (and counts towards `limit`); the step goes on with the next.
 */
export async function applyRetention(deps: QuarantineDependencies, limit: number): Promise<MaintenanceStep> {
  const policies = await retentionPolicies(deps.db);
  let handled = 0;
  let taken = 0;
  for (const policy of policies) {
    for (const phase of ['soft', 'hard'] as const) {
      const afterMs = phase === 'soft' ? policy.soft_delete_after_ms : policy.hard_delete_after_ms;
      if (afterMs === null) continue;
      while (taken < limit) {
        const step = await isolatingJob(deps, 'APPLY_RETENTION', async (tx, lockedJob) => {
          const job = await lockJobPastRetention(tx, policy.queue, phase === 'soft' ? 'ACTIVE' : 'SOFT_DELETED', Number(afterMs));
          if (!job) return false;
          lockedJob(job.id);
          const now = await transactionNow(tx);
          if (phase === 'soft') {
            const transition = planChange(job, 'SOFT_DELETE', { requested_by: 'retention' });
            if (transition) await applyTransition(tx, job, transition, now);
          } else {
            await startHardDeletion(tx, job, now, 'retention');
          }
          return true;
        });
        if ('done' in step && !step.done) break;
        taken += 1;
        if ('done' in step) handled += 1;
      }
    }
  }
  return { handled, nextDueAt: undefined };
}

/** Stores (or, with neither age, removes) a queue's policy; answers it as now in force. */
export async function setRetentionPolicy(
  db: Kysely<Database>,
  queue: string,
  softDeleteAfterMs: number | undefined,
  hardDeleteAfterMs: number | undefined,
): Promise<RetentionPolicy> {
  if (softDeleteAfterMs === undefined && hardDeleteAfterMs === undefined) {
    await removeRetentionPolicy(db, queue);
  } else {
    await storeRetentionPolicy(db, {
      queue,
      soft_delete_after_ms: softDeleteAfterMs === undefined ? null : BigInt(softDeleteAfterMs),
      hard_delete_after_ms: hardDeleteAfterMs === undefined ? null : BigInt(hardDeleteAfterMs),
    });
  }
  return create(RetentionPolicySchema, {
    queue,
    softDeleteAfter: softDeleteAfterMs === undefined ? undefined : durationFromMs(softDeleteAfterMs),
    hardDeleteAfter: hardDeleteAfterMs === undefined ? undefined : durationFromMs(hardDeleteAfterMs),
  });
}

/**
 * Feed pruning: removes up to `limit` change-feed entries older than
 * `olderThanMs` by the database clock ({@link deleteFeedEntriesOlderThan}).
 * A WatchJobs cursor lives at most the events service's cursor lifetime;
 * the execution service asks for at least that plus a day, so no cursor
 * inside its lifetime loses an entry it still needs, and an older cursor
 * is refused as expired anyway.
 */
export async function pruneFeed(db: Kysely<Database>, olderThanMs: number, limit: number): Promise<MaintenanceStep> {
  return { handled: await deleteFeedEntriesOlderThan(db, olderThanMs, limit), nextDueAt: undefined };
}

/** The shortest retention age: one second. */
const RETENTION_MIN_MS = 1000;

/** A retention policy's ages in milliseconds, each checked (`field` prefixes the violations' paths). */
export function retentionAges(
  policy: { readonly softDeleteAfter?: Parameters<typeof durationMs>[0]; readonly hardDeleteAfter?: Parameters<typeof durationMs>[0] },
  field: string,
): { softDeleteAfterMs: number | undefined; hardDeleteAfterMs: number | undefined } {
  const age = (value: Parameters<typeof durationMs>[0], name: string): number | undefined => {
    if (value === undefined) return undefined;
    const ms = durationMs(value);
    if (ms === undefined || !Number.isInteger(ms) || ms < RETENTION_MIN_MS) throw invalidField(`${field}.${name}`, 'must be a whole number of milliseconds, at least one second');
    return ms;
  };
  return { softDeleteAfterMs: age(policy.softDeleteAfter, 'soft_delete_after'), hardDeleteAfterMs: age(policy.hardDeleteAfter, 'hard_delete_after') };
}

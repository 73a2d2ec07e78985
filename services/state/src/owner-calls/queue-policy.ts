import { create } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import type { Kysely } from 'kysely';
import { invalidField, isValidQueueName } from '@docket/contracts';
import {
  GetQueueResponseSchema,
  QueuePolicySchema,
  RetentionPolicySchema,
  type GetQueueResponse,
  type QueuePolicy,
  type SetQueuePolicyRequest,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { durationMs } from '@docket/service-kit';
import type { Database } from '../db/tables/index.js';
import { findQueueSettings, writeQueueSettings, type QueueSettingsChange } from '../db/queries/queue-settings.js';
import { findRetentionPolicy } from '../db/queries/retention.js';
import { retentionAges, setRetentionPolicy } from '../maintenance/retention.js';
import { readOldestQueuedMs, readQueueCounts } from '../db/queries/queue-stats.js';
import { statusCounts } from '../reads/queue-stats.js';

/** Bounds of a queue policy (SPEC section 13). */
export const QUEUE_POLICY_BOUNDS = {
  maxConcurrency: 100_000,
  rateJobs: 1_000_000,
  ratePerMs: { min: 1_000, max: 86_400_000 },
} as const;

/** A checked SetQueuePolicy: undefined fields stay as they are; null removes a limit. */
export interface QueuePolicyChange {
  readonly queue: string;
  readonly maxConcurrency?: number | null;
  readonly rate?: { readonly jobs: number; readonly perMs: number } | null;
  readonly paused?: boolean;
  readonly perKeyConcurrency?: number | null;
  readonly retention?: { readonly softDeleteAfterMs: number | undefined; readonly hardDeleteAfterMs: number | undefined };
}

/** Checks a SetQueuePolicy request (INVALID_FIELD naming the field) before anything is written. */
export function parseQueuePolicyChange(request: SetQueuePolicyRequest | undefined): QueuePolicyChange {
  if (!request || !isValidQueueName(request.queue)) throw invalidField('queue', 'must match ^[a-z0-9][a-z0-9._-]{0,127}$');
  const change: { -readonly [K in keyof QueuePolicyChange]: QueuePolicyChange[K] } = { queue: request.queue };
  if (request.maxConcurrency !== undefined) {
    const limit = request.maxConcurrency;
    if (!Number.isInteger(limit) || limit < 0 || limit > QUEUE_POLICY_BOUNDS.maxConcurrency) {
      throw invalidField('max_concurrency', `must be between 1 and ${QUEUE_POLICY_BOUNDS.maxConcurrency} (0 removes the limit)`);
    }
    change.maxConcurrency = limit === 0 ? null : limit;
  }
  if (request.rateLimit) {
    const { jobs, per } = request.rateLimit;
    if (jobs === 0) change.rate = null;
    else {
      if (!Number.isInteger(jobs) || jobs < 1 || jobs > QUEUE_POLICY_BOUNDS.rateJobs) {
        throw invalidField('rate_limit.jobs', `must be between 1 and ${QUEUE_POLICY_BOUNDS.rateJobs} (0 removes the limit)`);
      }
      const perMs = durationMs(per);
      const { min, max } = QUEUE_POLICY_BOUNDS.ratePerMs;
      if (perMs === undefined || !Number.isInteger(perMs) || perMs < min || perMs > max) {
        throw invalidField('rate_limit.per', 'must be a whole number of milliseconds between 1s and 24 hours');
      }
      change.rate = { jobs, perMs };
    }
  }
  if (request.paused !== undefined) change.paused = request.paused;
  if (request.perKeyConcurrency !== undefined) {
    const limit = request.perKeyConcurrency;
    if (!Number.isInteger(limit) || limit < 0 || limit > QUEUE_POLICY_BOUNDS.maxConcurrency) {
      throw invalidField('per_key_concurrency', `must be between 1 and ${QUEUE_POLICY_BOUNDS.maxConcurrency} (0 removes the limit)`);
    }
    change.perKeyConcurrency = limit === 0 ? null : limit;
  }
  if (request.retention) change.retention = retentionAges(request.retention, 'retention');
  return change;
}

/**
 * Applies a policy change and answers the whole policy now in force. The
 * queue's `queue_settings` row holds its flow control (a row with nothing
 * left to enforce is removed, so claims of an unconfigured queue take no
 * lock); a changed rate starts with a full bucket. Claims read the row
 * after taking the queue's advisory lock, so each claim sees one policy.
 */
export async function setQueuePolicy(db: Kysely<Database>, change: QueuePolicyChange): Promise<QueuePolicy> {
  await db.transaction().execute(async (tx) => {
    const set: QueueSettingsChange = {
      ...(change.maxConcurrency !== undefined ? { max_concurrency: change.maxConcurrency } : {}),
      ...(change.rate !== undefined
        ? { rate_jobs: change.rate?.jobs ?? null, rate_per_ms: change.rate ? BigInt(change.rate.perMs) : null, rate_tokens: null, rate_refilled_at: null }
        : {}),
      ...(change.paused !== undefined ? { paused: change.paused } : {}),
      ...(change.perKeyConcurrency !== undefined ? { per_key_concurrency: change.perKeyConcurrency } : {}),
    };
    if (Object.keys(set).length > 0) await writeQueueSettings(tx, change.queue, set);
  });
  if (change.retention) await setRetentionPolicy(db, change.queue, change.retention.softDeleteAfterMs, change.retention.hardDeleteAfterMs);
  return readPolicy(db, change.queue);
}

/**
 * GetQueue: the policy, jobs by status, running attempts and the oldest
 * queued job's age, in one snapshot; the counts come from the counters the
 * jobs table's triggers maintain (as GetQueueStats'), so the cost does not
 * grow with the queue.
 */
export async function readQueue(db: Kysely<Database>, queue: string): Promise<GetQueueResponse> {
  if (!isValidQueueName(queue)) throw invalidField('queue', 'must match ^[a-z0-9][a-z0-9._-]{0,127}$');
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (tx) => {
      const policy = await readPolicy(tx, queue);
      const counts = await readQueueCounts(tx, queue);
      const waitedMs = await readOldestQueuedMs(tx, queue);
      return create(GetQueueResponseSchema, {
        policy,
        counts: statusCounts(counts),
        runningAttempts: (counts.get('RUNNING') ?? 0n) + (counts.get('CANCELLING') ?? 0n),
        oldestQueuedAge: waitedMs === undefined ? undefined : durationFromMs(Math.round(waitedMs)),
      });
    });
}

async function readPolicy(db: Kysely<Database>, queue: string): Promise<QueuePolicy> {
  const settings = await findQueueSettings(db, queue);
  const retention = await findRetentionPolicy(db, queue);
  return create(QueuePolicySchema, {
    queue,
    maxConcurrency: settings?.max_concurrency ?? 0,
    rateLimit: settings?.rate_jobs ? { jobs: settings.rate_jobs, per: durationFromMs(Number(settings.rate_per_ms)) } : undefined,
    paused: settings?.paused ?? false,
    perKeyConcurrency: settings?.per_key_concurrency ?? 0,
    retention: retention
      ? create(RetentionPolicySchema, {
          queue,
          softDeleteAfter: retention.soft_delete_after_ms === null ? undefined : durationFromMs(Number(retention.soft_delete_after_ms)),
          hardDeleteAfter: retention.hard_delete_after_ms === null ? undefined : durationFromMs(Number(retention.hard_delete_after_ms)),
        })
      : undefined,
  });
}

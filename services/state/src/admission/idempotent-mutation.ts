import { createHash } from 'node:crypto';
import { toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { bindingVanished, replayBinding } from './idempotent-replay.js';
import type { Kysely, Transaction } from 'kysely';
import type { IdempotencyKey, RequestDigest } from '@docket/contracts';
import { JobSchema, type Job } from '@docket/proto/docket/common/v1/job_pb.js';
import type { Database } from '../db/tables/index.js';
import { transactionNow } from '../db/queries/clock.js';
import {
  bindIdempotencyRecord,
  findIdempotencyRecord,
  storeIdempotentResponse,
  type IdempotencyScope,
} from '../db/queries/idempotency-records.js';

/** What binds an effecting public request (SPEC section 3). */
export interface IdempotentRequest {
  readonly subject: string;
  /** The public RPC path without its leading slash. */
  readonly operation: string;
  readonly key: IdempotencyKey;
  readonly digest: RequestDigest;
  readonly ttlMs: number;
}

/** A decided mutation: the original response, and whether it is a replay. */
export interface MutationOutcome {
  readonly job: Job;
  readonly replayed: boolean;
  readonly idempotencyExpiresAt: Date;
  /** A SubmitJob answered with the active job holding its `unique_while_active` key. */
  readonly deduplicated?: boolean;
}

/** A decided mutation whose stored response is any message (a job, a signal). */
export interface StoredOutcome<S extends DescMessage> {
  readonly value: MessageShape<S>;
  readonly replayed: boolean;
  readonly idempotencyExpiresAt: Date;
}

/** How often a binding that vanished mid-decision (it expired) is retried. */
const ATTEMPTS = 3;

/**
 * Runs `mutate` at most once per (subject, operation, key), in one
 * transaction with the binding and the complete response. The binding is
 * inserted first, against its primary key: concurrent duplicates from any
 * number of processes wait for the first to commit and then replay its
 * stored response without touching the job. The same key with another
 * digest is IDEMPOTENCY_CONFLICT and writes nothing. A mutation that fails
 * rolls its binding back with it, so a retry decides afresh.
 */
export async function mutateIdempotently(
  db: Kysely<Database>,
  request: IdempotentRequest,
  mutate: (tx: Transaction<Database>, now: Date) => Promise<Job>,
): Promise<MutationOutcome> {
  const outcome = await storeIdempotently(db, request, JobSchema, async (tx, now) => {
    const job = await mutate(tx, now);
    return { value: job, jobId: job.id };
  });
  return { job: outcome.value, replayed: outcome.replayed, idempotencyExpiresAt: outcome.idempotencyExpiresAt };
}

/**
 * {@link mutateIdempotently} for a response of any message type: `mutate`
 * answers the response to store and the job it belongs to (null for a
 * response that belongs to no job, such as a schedule's).
 */
export async function storeIdempotently<S extends DescMessage>(
  db: Kysely<Database>,
  request: IdempotentRequest,
  schema: S,
  mutate: (tx: Transaction<Database>, now: Date) => Promise<{ readonly value: MessageShape<S>; readonly jobId: string | null }>,
): Promise<StoredOutcome<S>> {
  const scope: IdempotencyScope = {
    subject: request.subject,
    operation: request.operation,
    keyHash: createHash('sha256').update(request.key.reveal()).digest(),
  };
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    const existing = await findIdempotencyRecord(db, scope);
    if (existing) return replayBinding(existing, request.digest, schema);
    const outcome = await db.transaction().execute(async (tx) => {
      const now = await transactionNow(tx);
      const idempotencyExpiresAt = new Date(now.getTime() + request.ttlMs);
      const bound = await bindIdempotencyRecord(tx, {
        subject: scope.subject,
        operation: scope.operation,
        key_hash: scope.keyHash,
        request_digest: request.digest,
        job_id: null,
        response: Buffer.alloc(0),
        created_at: now,
        expires_at: idempotencyExpiresAt,
      });
      if (!bound) {
        const winner = await findIdempotencyRecord(tx, scope);
        return winner ? replayBinding(winner, request.digest, schema) : undefined;
      }
      const { value, jobId } = await mutate(tx, now);
      await storeIdempotentResponse(tx, scope, Buffer.from(toBinary(schema, value)), jobId);
      return { value, replayed: false, idempotencyExpiresAt };
    });
    if (outcome) return outcome;
  }
  throw bindingVanished();
}

import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import {
  GENESIS_HASH,
  canonicalJson,
  newId,
  type IdempotencyKey,
  type RequestDigest,
  type ValidJobSpec,
} from '@docket/contracts';
import type { Database, JsonObject } from '../db/tables/index.js';
import { recordJobChange } from '../db/queries/job-changes.js';
import { insertJobEvents } from '../db/queries/job-events.js';
import { insertJob, type NewJobRow } from '../db/queries/jobs.js';
import { chainEvents } from './chain-events.js';
import { mutateIdempotently, type MutationOutcome } from './idempotent-mutation.js';
import { projectJob } from './job-projection.js';

/** One admission to decide. */
export interface AdmitJobCommand {
  readonly subject: string;
  /** The public RPC path without its leading slash. */
  readonly operation: string;
  readonly key: IdempotencyKey;
  readonly digest: RequestDigest;
  readonly ttlMs: number;
  readonly spec: ValidJobSpec;
}

/** The decided admission: the original response, and whether it is a replay. */
export type AdmissionOutcome = MutationOutcome;

/**
 * Decides one admission (SPEC section 3) through {@link mutateIdempotently}:
 * the binding of (subject, operation, key) to the digest, the job row, its
 * `job.admitted` event (sequence 1), its feed entry and the complete
 * response commit together or not at all. Concurrent duplicates from any
 * number of processes create exactly one job; the others replay it.
 */
export async function admitJob(db: Kysely<Database>, command: AdmitJobCommand): Promise<AdmissionOutcome> {
  return mutateIdempotently(db, command, async (tx, now) => {
    const job = newJobRow(command, now);
    const admitted = chainEvents(
      { jobId: job.id, requestDigest: command.digest, sequence: 0n, hash: GENESIS_HASH },
      [{ type: 'job.admitted', payload: admittedPayload(command.spec) }],
      now,
    );
    const stored = { ...job, event_count: '1', head_hash: admitted.head.hash };
    await insertJob(tx, stored);
    await insertJobEvents(tx, admitted.rows);
    await recordJobChange(tx, stored);
    return projectJob(stored);
  });
}

function newJobRow(command: AdmitJobCommand, now: Date): NewJobRow {
  const { spec } = command;
  return {
    id: newId('job'),
    owner: command.subject,
    queue: spec.queue,
    label: spec.label,
    input: spec.input,
    priority: spec.priority,
    revision: '1',
    status: 'QUEUED',
    lifecycle: 'ACTIVE',
    request_digest: command.digest,
    run_after: spec.runAfter ?? null,
    max_attempts: spec.maxAttempts,
    initial_backoff_ms: String(spec.initialBackoffMs),
    max_backoff_ms: String(spec.maxBackoffMs),
    lost_attempt_policy: spec.lostAttemptPolicy,
    attempt_count: 0,
    fence: '0',
    progress: null,
    checkpoint: null,
    result: null,
    failure: null,
    event_count: '0',
    head_hash: GENESIS_HASH,
    created_at: now,
    updated_at: now,
    current_attempt_id: null,
    current_worker_incarnation: null,
    lease_expires_at: null,
    cancel_requested: false,
    pause_requested: false,
    not_before: null,
  };
}

/**
 * The `job.admitted` payload: what was admitted, with the input represented
 * by its SHA-256 so that the chain commits to it without repeating it.
 */
function admittedPayload(spec: ValidJobSpec): JsonObject {
  return {
    queue: spec.queue,
    priority: spec.priority,
    label: spec.label,
    input_sha256: createHash('sha256').update(canonicalJson(spec.input)).digest('hex'),
    max_attempts: spec.maxAttempts,
    initial_backoff_ms: spec.initialBackoffMs,
    max_backoff_ms: spec.maxBackoffMs,
    lost_attempt_policy: spec.lostAttemptPolicy,
    run_after: spec.runAfter ? spec.runAfter.toISOString() : null,
  };
}

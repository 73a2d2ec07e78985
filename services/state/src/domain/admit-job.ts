import { createHash } from 'node:crypto';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import type { Kysely } from 'kysely';
import {
  DocketError,
  GENESIS_HASH,
  canonicalJson,
  newId,
  type IdempotencyKey,
  type RequestDigest,
} from '@docket/contracts';
import { JobSchema, type Job } from '@docket/proto/docket/common/v1/job_pb.js';
import type { Database, JsonObject, LostAttemptPolicyName } from '../db/tables/index.js';
import { transactionNow } from '../db/queries/clock.js';
import {
  bindIdempotencyRecord,
  findIdempotencyRecord,
  type IdempotencyRecord,
  type IdempotencyScope,
} from '../db/queries/idempotency-records.js';
import { recordJobChange } from '../db/queries/job-changes.js';
import { insertJobEvents } from '../db/queries/job-events.js';
import { insertJob, type NewJobRow } from '../db/queries/jobs.js';
import { chainEvents } from './chain-events.js';
import { projectJob } from './job-projection.js';

/** A job description that has passed validation, defaults applied. */
export interface ValidJobSpec {
  readonly queue: string;
  readonly input: JsonObject;
  readonly label: string;
  readonly priority: number;
  readonly runAfter: Date | undefined;
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly lostAttemptPolicy: LostAttemptPolicyName;
}

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
export interface AdmissionOutcome {
  readonly job: Job;
  readonly replayed: boolean;
  readonly idempotencyExpiresAt: Date;
}

/** How often a binding that vanished mid-decision (it expired) is retried. */
const ATTEMPTS = 3;

/**
 * Decides one admission in one transaction (SPEC section 3). The binding of
 * (subject, operation, key) to the digest, the job row, its `job.admitted`
 * event (sequence 1) and the complete response commit together or not at
 * all. Concurrent duplicates from any number of processes serialise on the
 * binding's primary key: exactly one creates the job, the others replay its
 * stored response. A different digest under a live binding is
 * IDEMPOTENCY_CONFLICT and writes nothing.
 */
export async function admitJob(db: Kysely<Database>, command: AdmitJobCommand): Promise<AdmissionOutcome> {
  const scope: IdempotencyScope = {
    subject: command.subject,
    operation: command.operation,
    keyHash: createHash('sha256').update(command.key.reveal()).digest(),
  };
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    const existing = await findIdempotencyRecord(db, scope);
    if (existing) return replay(existing, command.digest);
    const outcome = await db.transaction().execute(async (tx) => {
      const now = await transactionNow(tx);
      const job = newJobRow(command, now);
      const admitted = chainEvents(
        { jobId: job.id, requestDigest: command.digest, sequence: 0n, hash: GENESIS_HASH },
        [{ type: 'job.admitted', payload: admittedPayload(command.spec) }],
        now,
      );
      const stored = { ...job, event_count: '1', head_hash: admitted.head.hash };
      const projection = projectJob(stored);
      const idempotencyExpiresAt = new Date(now.getTime() + command.ttlMs);
      const bound = await bindIdempotencyRecord(tx, {
        subject: scope.subject,
        operation: scope.operation,
        key_hash: scope.keyHash,
        request_digest: command.digest,
        job_id: job.id,
        response: Buffer.from(toBinary(JobSchema, projection)),
        created_at: now,
        expires_at: idempotencyExpiresAt,
      });
      if (!bound) {
        const winner = await findIdempotencyRecord(tx, scope);
        return winner ? replay(winner, command.digest) : undefined;
      }
      await insertJob(tx, stored);
      await insertJobEvents(tx, admitted.rows);
      await recordJobChange(tx, stored);
      return { job: projection, replayed: false, idempotencyExpiresAt };
    });
    if (outcome) return outcome;
  }
  throw new DocketError('UNAVAILABLE', 'admission could not be decided, retry with the same idempotency key');
}

function replay(record: IdempotencyRecord, digest: RequestDigest): AdmissionOutcome {
  if (record.request_digest !== digest) {
    throw new DocketError(
      'IDEMPOTENCY_CONFLICT',
      'the idempotency key is already bound to a different request',
    );
  }
  return {
    job: fromBinary(JobSchema, record.response),
    replayed: true,
    idempotencyExpiresAt: record.expires_at,
  };
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

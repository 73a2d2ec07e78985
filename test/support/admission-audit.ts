import { createHash } from 'node:crypto';
import { create, toBinary, toJson, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import type pg from 'pg';
import { expect } from 'vitest';
import { GENESIS_HASH, computeRequestDigest, verifyChainSegment, type JsonValue } from '@docket/contracts';
import { SubmitJobRequestSchema, SubmitJobResponseSchema, type SubmitJobResponse } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { Event } from '@docket/proto/docket/common/v1/event_pb.js';
import { readWholeJournal } from './job-writer.js';

/*
 * What the admission tests check about stored admissions, computed the way
 * any client can (SPEC sections 2, 3 and 6), without trusting the service:
 * the request digest a submission binds its key to, the hash of a key as
 * idempotency_records stores it, a journal read back through the events
 * service and re-verified locally, and the rows one admission leaves.
 */

/** The RPC path SubmitJob binds keys and digests to (SPEC section 2). */
export const SUBMIT_JOB_OPERATION = 'docket.admission.v1.AdmissionService/SubmitJob';

/** A SubmitJob request as a test writes it. */
export type SubmitJobInit = Exclude<MessageInitShape<typeof SubmitJobRequestSchema>, { $typeName: string }>;

/**
 * The request digest of SPEC section 2, recomputed by the test from the
 * request it sent: sha256(JCS({operation, subject, request})) with the
 * request's proto3 JSON (default options) with idempotency_key cleared.
 */
export function submitJobDigest(subject: string, request: SubmitJobInit): string {
  const withoutKey = create(SubmitJobRequestSchema, { ...request, idempotencyKey: '' });
  return computeRequestDigest({ operation: SUBMIT_JOB_OPERATION, subject, request: toJson(SubmitJobRequestSchema, withoutKey) as JsonValue });
}

/** SHA-256 of an idempotency key, hex: how idempotency_records stores it (`encode(key_hash, 'hex')`). */
export function keyHashOf(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/**
 * Reads a job's whole journal through the events service (ReadJobEvents,
 * which verifies every link it returns) and verifies it again here from
 * genesis, recomputing every hash with `requestDigest`, the digest of the
 * submission that admitted the job. Returns the journal.
 */
export async function expectJournalVerifies(eventsUrl: string, token: string, jobId: string, requestDigest: string): Promise<Event[]> {
  const journal = await readWholeJournal(eventsUrl, token, jobId);
  const verdict = verifyChainSegment(
    journal.map((event) => ({
      jobId: event.jobId,
      requestDigest,
      sequence: event.sequence,
      previousHash: event.previousHash,
      type: event.type,
      payload: (event.payload ?? {}) as { [k: string]: JsonValue },
      occurredAt: event.occurredAt ? timestampDate(event.occurredAt) : new Date(Number.NaN),
      hash: event.hash,
    })),
    { jobId, requestDigest, previousHash: GENESIS_HASH, previousSequence: 0 },
  );
  expect(verdict, `journal of ${jobId}`).toEqual({ ok: true, headHash: journal.at(-1)?.hash, lastSequence: BigInt(journal.length) });
  return journal;
}

/** One stored binding of a subject's SubmitJob keys, with what its admission left behind. */
export interface AdmissionLedgerRow {
  readonly key_hash: string;
  readonly request_digest: string;
  /** The job the binding names (null if it names none). */
  readonly job_id: string | null;
  /** Whether that job row exists. */
  readonly job_exists: boolean;
  /** The job row's digest (null if there is no row). */
  readonly job_digest: string | null;
  /** The job's journal: event types in sequence order. */
  readonly event_types: string[];
  /** The job's change-feed entries. */
  readonly changes: number;
}

/** Every SubmitJob binding of `subject`, with its job row, journal and feed entries. */
export async function admissionLedger(sql: pg.ClientBase | pg.Pool, subject: string): Promise<AdmissionLedgerRow[]> {
  const { rows } = await sql.query<AdmissionLedgerRow>(
    `select encode(r.key_hash, 'hex') as key_hash, r.request_digest, r.job_id,
            j.id is not null as job_exists, j.request_digest as job_digest,
            coalesce((select array_agg(e.type order by e.sequence) from job_events e where e.job_id = r.job_id), '{}') as event_types,
            (select count(*)::int from job_changes c where c.job_id = r.job_id) as changes
       from idempotency_records r left join jobs j on j.id = r.job_id
      where r.subject = $1 and r.operation = $2
      order by 1`,
    [subject, SUBMIT_JOB_OPERATION],
  );
  return rows;
}

/** The jobs of `owner` that no SubmitJob binding of theirs names: must always be none. */
export async function unboundJobs(sql: pg.ClientBase | pg.Pool, owner: string): Promise<string[]> {
  const { rows } = await sql.query<{ id: string }>(
    `select j.id from jobs j
      where j.owner = $1
        and not exists (select 1 from idempotency_records r where r.job_id = j.id and r.subject = $1 and r.operation = $2)`,
    [owner, SUBMIT_JOB_OPERATION],
  );
  return rows.map((row) => row.id);
}

/**
 * Checks a subject's stored admissions are whole: every binding names an
 * existing job with the binding's digest, whose journal is exactly its one
 * `job.admitted` event and which has exactly one feed entry; and every job
 * of the subject is named by a binding. Returns the bindings.
 */
export async function expectAdmissionsWhole(sql: pg.ClientBase | pg.Pool, subject: string): Promise<AdmissionBindings> {
  const ledger = await admissionLedger(sql, subject);
  const broken = ledger.filter(
    (row) =>
      !row.job_exists ||
      row.job_digest !== row.request_digest ||
      row.event_types.length !== 1 ||
      row.event_types[0] !== 'job.admitted' ||
      row.changes !== 1,
  );
  expect(broken, 'bindings whose admission is not whole').toEqual([]);
  expect(await unboundJobs(sql, subject), 'jobs without a binding').toEqual([]);
  expect(new Set(ledger.map((row) => row.job_id)).size, 'one job per binding').toBe(ledger.length);
  return new AdmissionBindings(subject, ledger);
}

/**
 * A subject's SubmitJob bindings as {@link expectAdmissionsWhole} found
 * them, looked up by the idempotency key a test sent (the table stores
 * only its hash), with the checks the admission tests make of them.
 */
export class AdmissionBindings {
  readonly #byKeyHash: ReadonlyMap<string, AdmissionLedgerRow>;

  constructor(
    /** The subject the requests were submitted as: part of each request's digest. */
    readonly subject: string,
    /** Every binding of the subject, in key hash order. */
    readonly rows: readonly AdmissionLedgerRow[],
  ) {
    this.#byKeyHash = new Map(rows.map((row) => [row.key_hash, row]));
  }

  /** How many keys are bound. */
  get size(): number {
    return this.rows.length;
  }

  /** The binding of `idempotencyKey`; undefined when the key is not bound. */
  of(idempotencyKey: string): AdmissionLedgerRow | undefined {
    return this.#byKeyHash.get(keyHashOf(idempotencyKey));
  }

  /** Fails unless `request`'s key is bound to job `jobId` and to the digest of `request` itself (SPEC section 2). */
  expectBound(request: SubmitJobInit, jobId: string, message?: string): void {
    expect(this.of(request.idempotencyKey!), message).toMatchObject({ job_id: jobId, request_digest: submitJobDigest(this.subject, request) });
  }

  /**
   * Fails unless `answer`, to `request` sent again with its key (a retry
   * of a failed call), is what these bindings, read before it was sent
   * again, call for: a replay of the job the key is bound to (an admission
   * that was acknowledged, or whose COMMIT landed though its answer was
   * lost), or a new admission when the key is not bound.
   */
  expectRetryAnswer(request: SubmitJobInit, answer: SubmitJobResponse, message?: string): void {
    const bound = this.of(request.idempotencyKey!);
    expect(answer.replayed, message).toBe(bound !== undefined);
    if (bound) expect(answer.job!.id, message).toBe(bound.job_id);
  }
}

/** Whether two SubmitJob responses are the same stored response (job and expiry, byte for byte), replayed or not. */
export function sameAdmission(a: SubmitJobResponse, b: SubmitJobResponse): boolean {
  return (
    a.job !== undefined &&
    b.job !== undefined &&
    Buffer.from(toBinary(SubmitJobResponseSchema, { ...a, replayed: false })).equals(Buffer.from(toBinary(SubmitJobResponseSchema, { ...b, replayed: false })))
  );
}

/**
 * Runs `work` for every item with at most `concurrency` in flight, in item
 * order; resolves with the results in item order.
 */
export async function inParallel<T, R>(items: readonly T[], concurrency: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await work(items[index] as T, index);
      }
    }),
  );
  return results;
}

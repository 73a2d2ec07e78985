import { createHash, randomBytes } from 'node:crypto';
import type { DescMethod, DescService } from '@bufbuild/protobuf';
import { Code, createClient } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '@docket/auth';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { ExecutionService, type WorkResponse } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { failureOfStatus } from '@docket/client-kit';
import type pg from 'pg';
import { seenByConnect, transportFor, type SeenFailure } from '../support/clients.js';
import type { DocketServices } from '../support/docket-services.js';
import { startInProcessCluster } from '../support/in-process-cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { startClusterWithSql, stopClustersWithSql } from '../support/cluster-with-sql.js';
import { newIdempotencyKey } from '../support/keys.js';
import { newOperationId } from '../support/raw-worker.js';

/*
 * The BOLA matrix of SPEC section 9 (issue 11): every public RPC, enumerated
 * from the generated service descriptors, called by every kind of caller,
 * about a job that exists and one that does not.
 *
 * - A job that is not the caller's answers exactly like a missing one: the
 *   same code, reason, message, metadata and details.
 * - PERMISSION_DENIED only for a role mismatch (a worker on admission or
 *   events, a user or admin on execution, a user on an admin-only call),
 *   and the same answer whether the job exists or not.
 * - UNAUTHENTICATED, one bare answer, for a missing, expired, wrongly
 *   signed or alg-none token.
 * - A worker without authority over an attempt gets the same answer for a
 *   live attempt it does not hold as for one that does not exist.
 * - No refused call changes the job's row, attempts, effects, signals or
 *   journal.
 */

let cluster: DocketServices;
let sql: pg.Client;

/**
 * The callers without a valid token. The others are the owner, another
 * user, an admin and a worker (on execution: a worker holding the attempt
 * and one intruding).
 */
const BAD_TOKENS = ['anonymous', 'expired', 'wrongSignature', 'algNone'] as const;

/** Ids that are well formed and name nothing. */
const MISSING = {
  jobId: `job_${'a'.repeat(26)}`,
  deletionId: `del_${'a'.repeat(26)}`,
  approvalId: `apr_${'a'.repeat(26)}`,
  attemptId: `att_${'a'.repeat(26)}`,
  incarnation: `wkr_${'a'.repeat(26)}`,
  effectId: `eff_${'a'.repeat(26)}`,
} as const;

/** What a call about one job needs to name it. */
interface JobTarget {
  readonly jobId: string;
  readonly queue: string;
  readonly submitKey: string;
  readonly deletionId: string;
  /** A ListJobs page token of the owner's for the job's queue ('' when none was made). */
  readonly pageToken: string;
  /** The approval the job waits for (a missing id when it waits for none). */
  readonly approvalId: string;
}

/** A call's outcome, reduced to what a matrix cell compares. */
type Outcome = { readonly ok: true; readonly seen: unknown } | { readonly ok: false; readonly failure: SeenFailure };

const tokens = {} as Record<'owner' | 'other' | 'admin' | 'worker' | 'holder' | 'intruder', string>;
/** Bad tokens, each naming the caller that would otherwise be entitled (the owner, or the holding worker). */
const badTokens = {} as Record<'front' | 'execution', Record<(typeof BAD_TOKENS)[number], string | undefined>>;

const unique = () => randomBytes(6).toString('hex');
const digestOf = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex');

/** One call of `method` on `service`, unary or the first frame of a server stream, as an outcome. */
async function invoke(service: DescService, url: string, method: DescMethod, request: object, token: string | undefined, project: (response: any) => unknown): Promise<Outcome> {
  const client = createClient(service, transportFor(url, 'grpc', token)) as unknown as Record<string, (request: object, options?: object) => any>;
  const call = client[method.localName]!;
  try {
    if (method.methodKind === 'server_streaming') {
      const abort = new AbortController();
      const frames = call(request, { signal: abort.signal }) as AsyncIterable<unknown>;
      try {
        for await (const frame of frames) return { ok: true, seen: project(frame) };
        return { ok: true, seen: 'ended without a frame' };
      } finally {
        abort.abort();
      }
    }
    if (method.methodKind === 'bidi_streaming') {
      // A worker session: the one call `request` names, on a stream held open until its answer.
      const abort = new AbortController();
      async function* oneCall(): AsyncGenerator<object> {
        yield request;
        await new Promise((resolve) => abort.signal.addEventListener('abort', resolve, { once: true }));
      }
      try {
        for await (const answer of call(oneCall(), { signal: abort.signal }) as AsyncIterable<WorkResponse>) {
          if (answer.result.case === 'error') return { ok: false, failure: seenByConnect(failureOfStatus(answer.result.value)) };
          return { ok: true, seen: project(answer) };
        }
        return { ok: true, seen: 'ended without a frame' };
      } finally {
        abort.abort();
      }
    }
    return { ok: true, seen: project(await call(request)) };
  } catch (error) {
    return { ok: false, failure: seenByConnect(error) };
  }
}

/** `OK`, or the code and reason of a failure, for the expectation tables. */
function summary(outcome: Outcome): string {
  return outcome.ok ? 'OK' : `${Code[outcome.failure.code]} ${outcome.failure.reason}`;
}

const UNAUTHENTICATED: SeenFailure = { code: Code.Unauthenticated, message: 'unauthenticated', reason: 'UNAUTHENTICATED', domain: 'docket', metadata: {}, violations: [] };
const PERMISSION_DENIED: SeenFailure = { code: Code.PermissionDenied, message: 'permission denied', reason: 'PERMISSION_DENIED', domain: 'docket', metadata: {}, violations: [] };

/** Everything stored about some jobs, to prove that refused calls wrote nothing. */
async function stored(jobIds: readonly string[]): Promise<unknown> {
  const read = async (table: string) =>
    (await sql.query(`select * from ${table} where ${table === 'jobs' ? 'id' : 'job_id'} = any($1)`, [jobIds])).rows.map((row) => JSON.stringify(row)).sort();
  return {
    jobs: await read('jobs'),
    events: await read('job_events'),
    attempts: await read('attempts'),
    effects: await read('job_effects'),
    signals: await read('job_signals'),
    deletions: await read('deletions'),
  };
}

// ---------------------------------------------------------------------------
// admission and events: the user-facing services
// ---------------------------------------------------------------------------

/**
 * One user-facing RPC. `request` names the target; `owner` and `admin`
 * record what each is legitimately answered about a live job of the
 * owner's (by default QUEUED; the admin gets a second such job) and about a
 * missing one; `other` what another user gets for both (identically).
 */
interface FrontCase {
  readonly request: (target: JobTarget) => object;
  readonly project?: (response: any) => unknown;
  /** Prepares the live target; by default a fresh QUEUED job of the owner's. */
  readonly live?: () => Promise<JobTarget>;
  readonly owner: readonly [live: string, missing: string];
  readonly admin: readonly [live: string, missing: string];
  readonly other: string;
  /**
   * Requests that would give the job away if the ownership check came after
   * another check (a stale revision, a cursor beyond the journal, a foreign
   * page token): another user must still get `other` (or the probe's own
   * `other`), identically for a live and a missing job, while the owner gets
   * the answer recorded here.
   */
  readonly probes?: Record<string, { readonly request: (target: JobTarget) => object; readonly owner: string; readonly other?: string }>;
}

const NOT_FOUND = 'NotFound NOT_FOUND';
const ILLEGAL = 'FailedPrecondition ILLEGAL_TRANSITION';
const ADMIN_ONLY = 'PermissionDenied PERMISSION_DENIED';
const jobOf = (response: { job?: { id: string; owner: string } }) => ({ owner: response.job?.owner, id: response.job?.id });

/** A fresh QUEUED job of the owner's, in a queue of its own. */
async function ownersJob(): Promise<JobTarget> {
  const queue = `bola-${unique()}`;
  const submitKey = newIdempotencyKey('bola-live');
  const client = createClient(AdmissionService, transportFor(cluster.admission.url, 'grpc', tokens.owner));
  const { job } = await client.submitJob({ idempotencyKey: submitKey, queue, input: { n: 1 } });
  return { jobId: job!.id, queue, submitKey, deletionId: MISSING.deletionId, pageToken: '', approvalId: MISSING.approvalId };
}

/** A job of the owner's that was cancelled and is being hard-deleted (the loops are off, so it stays so). */
async function ownersDeletion(): Promise<JobTarget> {
  const target = await ownersJob();
  const client = createClient(AdmissionService, transportFor(cluster.admission.url, 'grpc', tokens.owner));
  await client.cancelJob({ idempotencyKey: newIdempotencyKey('bola-cancel'), jobId: target.jobId });
  const { deletion } = await client.hardDeleteJob({ idempotencyKey: newIdempotencyKey('bola-hard'), jobId: target.jobId });
  return { ...target, deletionId: deletion!.deletionId };
}

/** Two jobs of the owner's in one queue, and the owner's token for the second page of that queue. */
async function ownersPages(): Promise<JobTarget> {
  const target = await ownersJob();
  const client = createClient(AdmissionService, transportFor(cluster.admission.url, 'grpc', tokens.owner));
  await client.submitJob({ idempotencyKey: newIdempotencyKey('bola-page'), queue: target.queue });
  const { nextPageToken } = await client.listJobs({ pageSize: 1, filter: { queue: target.queue } });
  expect(nextPageToken).not.toBe('');
  return { ...target, pageToken: nextPageToken };
}

/** A schedule of the owner's (hourly, in the job's queue), named through the target's `jobId`: schedule ids have the same shape. */
async function ownersSchedule(): Promise<JobTarget> {
  const target = await ownersJob();
  const client = createClient(AdmissionService, transportFor(cluster.admission.url, 'grpc', tokens.owner));
  const { schedule } = await client.createSchedule({ idempotencyKey: newIdempotencyKey('bola-schedule'), schedule: hourlySchedule(target) });
  return { ...target, jobId: schedule!.scheduleId };
}

/** An hourly schedule into the target's queue. */
const hourlySchedule = (t: JobTarget) => ({ trigger: { case: 'interval' as const, value: { seconds: 3_600n } }, jobTemplate: { queue: t.queue } });
const scheduleOwnerOf = (response: { schedule?: { owner: string; scheduleId: string } }) => ({ owner: response.schedule?.owner, id: response.schedule?.scheduleId });

const missingTarget = (): JobTarget => ({
  jobId: MISSING.jobId,
  queue: `bola-missing-${unique()}`,
  submitKey: newIdempotencyKey('bola-missing'),
  deletionId: MISSING.deletionId,
  // A page token that nobody was given.
  pageToken: Buffer.from(`bola-${unique()}`).toString('base64url'),
  approvalId: MISSING.approvalId,
});

/** A job of the owner's, PAUSED waiting for an approval its worker asked for. */
async function ownersApproval(): Promise<JobTarget> {
  const target = await ownersJob();
  const worker = createClient(ExecutionService, transportFor(cluster.execution.url, 'grpc', tokens.worker));
  const { workerIncarnation } = await worker.registerWorker({ workerName: `bola-approver-${unique()}`, queues: [target.queue], maxConcurrency: 1 });
  const [assignment] = (await worker.claimJobs({ workerIncarnation, queues: [target.queue], maxJobs: 1, operationId: newOperationId() })).assignments;
  expect(assignment?.envelope?.jobId).toBe(target.jobId);
  const attempt = { attemptId: assignment!.authority!.attemptId, fence: assignment!.authority!.fence, workerIncarnation };
  const { approvalId } = await worker.requestApproval({ attempt, operationId: newOperationId(), prompt: 'ship it?' });
  return { ...target, approvalId };
}
const STALE_REVISION = 'Aborted REVISION_MISMATCH';
/** A mutation of one job that names a revision the job does not have. */
const staleRevision = { request: (t: JobTarget) => ({ idempotencyKey: key(), jobId: t.jobId, expectedRevision: 99n }), owner: STALE_REVISION };
const key = () => newIdempotencyKey('bola');

/** Every admission and events RPC, by `Service.Method`. A new RPC without an entry fails the matrix. */
const FRONT_CASES: Record<string, FrontCase> = {
  'AdmissionService.SubmitJob': {
    // The live target is the owner's idempotency key and request: another caller's submit must make its own job, never replay the owner's.
    request: (t) => ({ idempotencyKey: t.submitKey, queue: t.queue, input: { n: 1 } }),
    project: (r) => ({ ownedBy: r.job?.owner, replayed: r.replayed }),
    owner: ['OK', 'OK'],
    admin: ['OK', 'OK'],
    other: 'OK',
  },
  'AdmissionService.SubmitJobs': {
    // As SubmitJob, item by item: another caller's item under the owner's key makes its own job.
    request: (t) => ({ items: [{ idempotencyKey: t.submitKey, queue: t.queue, input: { n: 1 } }] }),
    project: (r) => r.results.map((item: any) => (item.result.case === 'submitted' ? { ownedBy: item.result.value.job?.owner, replayed: item.result.value.replayed } : item.result.value.code)),
    owner: ['OK', 'OK'],
    admin: ['OK', 'OK'],
    other: 'OK',
  },
  'AdmissionService.GetJob': { request: (t) => ({ jobId: t.jobId }), project: jobOf, owner: ['OK', NOT_FOUND], admin: ['OK', NOT_FOUND], other: NOT_FOUND },
  'AdmissionService.ListJobs': {
    // Filtered to the live job's queue: another user's page is empty, like the page of a queue with no jobs.
    request: (t) => ({ filter: { queue: t.queue } }),
    project: (r) => r.jobs.map((job: { owner: string }) => job.owner),
    live: ownersPages,
    owner: ['OK', 'OK'],
    admin: ['OK', 'OK'],
    other: 'OK',
    // The owner's page token, replayed by another user, must read like a token nobody was given.
    probes: { ownersPageToken: { request: (t) => ({ pageSize: 1, pageToken: t.pageToken, filter: { queue: t.queue } }), owner: 'OK', other: 'InvalidArgument CURSOR_INVALID' } },
  },
  'AdmissionService.CancelJob': { request: (t) => ({ idempotencyKey: key(), jobId: t.jobId }), probes: { staleRevision }, project: jobOf, owner: ['OK', NOT_FOUND], admin: ['OK', NOT_FOUND], other: NOT_FOUND },
  'AdmissionService.PauseJob': { request: (t) => ({ idempotencyKey: key(), jobId: t.jobId }), probes: { staleRevision }, project: jobOf, owner: ['OK', NOT_FOUND], admin: ['OK', NOT_FOUND], other: NOT_FOUND },
  // A QUEUED job cannot be resumed (docs/execution.md, cancel and pause).
  'AdmissionService.ResumeJob': { request: (t) => ({ idempotencyKey: key(), jobId: t.jobId }), probes: { staleRevision }, owner: [ILLEGAL, NOT_FOUND], admin: [ILLEGAL, NOT_FOUND], other: NOT_FOUND },
  // Only an ended job may be deleted (docs/deletion.md).
  'AdmissionService.SoftDeleteJob': { request: (t) => ({ idempotencyKey: key(), jobId: t.jobId }), probes: { staleRevision }, owner: [ILLEGAL, NOT_FOUND], admin: [ILLEGAL, NOT_FOUND], other: NOT_FOUND },
  // Restoring an ACTIVE job is a no-op that answers the job (docs/errors.md).
  'AdmissionService.RestoreJob': { request: (t) => ({ idempotencyKey: key(), jobId: t.jobId }), probes: { staleRevision }, project: jobOf, owner: ['OK', NOT_FOUND], admin: ['OK', NOT_FOUND], other: NOT_FOUND },
  'AdmissionService.HardDeleteJob': { request: (t) => ({ idempotencyKey: key(), jobId: t.jobId }), owner: [ILLEGAL, NOT_FOUND], admin: [ILLEGAL, NOT_FOUND], other: NOT_FOUND },
  'AdmissionService.GetDeletion': {
    request: (t) => ({ deletionId: t.deletionId }),
    project: (r) => r.deletion?.jobId,
    live: ownersDeletion,
    owner: ['OK', NOT_FOUND],
    admin: ['OK', NOT_FOUND],
    other: NOT_FOUND,
  },
  // The live job waits for an approval; once the owner has decided it, another user replaying the decision must still get NOT_FOUND, not APPROVAL_SPENT.
  'AdmissionService.DecideApproval': {
    request: (t) => ({ idempotencyKey: key(), jobId: t.jobId, approvalId: t.approvalId, decision: 1 }),
    project: jobOf,
    live: ownersApproval,
    owner: ['OK', NOT_FOUND],
    admin: ['OK', NOT_FOUND],
    other: NOT_FOUND,
    // The approval of a job that does not wait for it: the owner is told so, another user must not be.
    probes: { approvalOfAnotherJob: { request: (t) => ({ idempotencyKey: key(), jobId: MISSING.jobId, approvalId: t.approvalId, decision: 1 }), owner: NOT_FOUND } },
  },
  'AdmissionService.SendSignal': {
    request: (t) => ({ idempotencyKey: key(), jobId: t.jobId, name: 'bola', payload: { n: 1 } }),
    project: (r) => r.signal?.name,
    owner: ['OK', NOT_FOUND],
    admin: ['OK', NOT_FOUND],
    other: NOT_FOUND,
  },
  'AdmissionService.ReconcileSignals': { request: (t) => ({ idempotencyKey: key(), jobId: t.jobId, action: 2 }), owner: ['OK', NOT_FOUND], admin: ['OK', NOT_FOUND], other: NOT_FOUND },
  'AdmissionService.RetryJob': { request: (t) => ({ idempotencyKey: key(), jobId: t.jobId }), owner: [ILLEGAL, NOT_FOUND], admin: [ILLEGAL, NOT_FOUND], other: NOT_FOUND },
  // Admin only: any user, the owner included, is refused for its role.
  'AdmissionService.SetRetentionPolicy': { request: (t) => ({ policy: { queue: t.queue } }), owner: [ADMIN_ONLY, ADMIN_ONLY], admin: ['OK', 'OK'], other: ADMIN_ONLY },
  'AdmissionService.SetLegalHold': { request: (t) => ({ jobId: t.jobId, held: true }), project: jobOf, owner: [ADMIN_ONLY, ADMIN_ONLY], admin: ['OK', NOT_FOUND], other: ADMIN_ONLY },
  'AdmissionService.SetQueuePolicy': { request: (t) => ({ queue: t.queue, paused: false }), owner: [ADMIN_ONLY, ADMIN_ONLY], admin: ['OK', 'OK'], other: ADMIN_ONLY },
  'AdmissionService.GetQueue': { request: (t) => ({ queue: t.queue }), owner: [ADMIN_ONLY, ADMIN_ONLY], admin: ['OK', 'OK'], other: ADMIN_ONLY },
  'AdmissionService.ExplainJob': { request: (t) => ({ jobId: t.jobId }), project: jobOf, owner: ['OK', NOT_FOUND], admin: ['OK', NOT_FOUND], other: NOT_FOUND },
  // Admin only; the owner's worker is listed, by queue, to an admin alone.
  // Admin only: a bulk operation acts on every owner's jobs.
  'AdmissionService.RetryJobs': { request: (t) => ({ idempotencyKey: key(), filter: { queue: t.queue } }), owner: [ADMIN_ONLY, ADMIN_ONLY], admin: ['OK', 'OK'], other: ADMIN_ONLY },
  'AdmissionService.CancelJobs': { request: (t) => ({ idempotencyKey: key(), filter: { queue: t.queue } }), owner: [ADMIN_ONLY, ADMIN_ONLY], admin: ['OK', 'OK'], other: ADMIN_ONLY },
  'AdmissionService.GetBulkOperation': { request: () => ({ operationId: `bop_${'a'.repeat(26)}` }), owner: [ADMIN_ONLY, ADMIN_ONLY], admin: [NOT_FOUND, NOT_FOUND], other: ADMIN_ONLY },
  'AdmissionService.GetQueueStats': { request: (t) => ({ queue: t.queue }), owner: [ADMIN_ONLY, ADMIN_ONLY], admin: ['OK', 'OK'], other: ADMIN_ONLY },
  'AdmissionService.ListWorkers': { request: (t) => ({ queue: t.queue }), owner: [ADMIN_ONLY, ADMIN_ONLY], admin: ['OK', 'OK'], other: ADMIN_ONLY },
  'AdmissionService.CreateSchedule': {
    // Like SubmitJob: another caller's create under the owner's key makes its own schedule, never replays the owner's.
    request: (t) => ({ idempotencyKey: t.submitKey, schedule: hourlySchedule(t) }),
    project: (r) => ({ ownedBy: r.schedule?.owner, replayed: r.replayed }),
    owner: ['OK', 'OK'],
    admin: ['OK', 'OK'],
    other: 'OK',
  },
  'AdmissionService.GetSchedule': { request: (t) => ({ scheduleId: t.jobId }), live: ownersSchedule, project: scheduleOwnerOf, owner: ['OK', NOT_FOUND], admin: ['OK', NOT_FOUND], other: NOT_FOUND },
  'AdmissionService.ListSchedules': {
    // Another user's listing never holds the owner's schedules.
    request: () => ({ pageSize: 200 }),
    project: (r) => r.schedules.some((schedule: { owner: string }) => schedule.owner === 'bola-owner'),
    live: ownersSchedule,
    owner: ['OK', 'OK'],
    admin: ['OK', 'OK'],
    other: 'OK',
  },
  'AdmissionService.PauseSchedule': { request: (t) => ({ idempotencyKey: key(), scheduleId: t.jobId }), live: ownersSchedule, project: scheduleOwnerOf, owner: ['OK', NOT_FOUND], admin: ['OK', NOT_FOUND], other: NOT_FOUND },
  'AdmissionService.ResumeSchedule': { request: (t) => ({ idempotencyKey: key(), scheduleId: t.jobId }), live: ownersSchedule, project: scheduleOwnerOf, owner: ['OK', NOT_FOUND], admin: ['OK', NOT_FOUND], other: NOT_FOUND },
  'AdmissionService.DeleteSchedule': { request: (t) => ({ idempotencyKey: key(), scheduleId: t.jobId }), live: ownersSchedule, project: scheduleOwnerOf, owner: ['OK', NOT_FOUND], admin: ['OK', NOT_FOUND], other: NOT_FOUND },
  'EventService.ReadJobEvents': {
    request: (t) => ({ jobId: t.jobId }),
    project: (r) => r.events.map((e: { type: string }) => e.type),
    owner: ['OK', NOT_FOUND],
    admin: ['OK', NOT_FOUND],
    other: NOT_FOUND,
    probes: { beyondLatest: { request: (t) => ({ jobId: t.jobId, afterSequence: 1000n }), owner: 'OutOfRange CURSOR_BEYOND_LATEST' } },
  },
  'EventService.StreamJobEvents': {
    request: (t) => ({ jobId: t.jobId }),
    project: (frame) => frame.frame.case,
    owner: ['OK', NOT_FOUND],
    admin: ['OK', NOT_FOUND],
    other: NOT_FOUND,
    probes: { beyondLatest: { request: (t) => ({ jobId: t.jobId, afterSequence: 1000n }), owner: 'OutOfRange CURSOR_BEYOND_LATEST' } },
  },
  'EventService.WatchJobs': {
    // Filtered to the live job's queue: the first frame another user sees must be what a queue without jobs shows.
    request: (t) => ({ filter: { queue: t.queue } }),
    project: (frame) => [frame.frame.case, frame.frame.value?.jobId ?? frame.frame.value?.reason],
    owner: ['OK', 'OK'],
    admin: ['OK', 'OK'],
    other: 'OK',
  },
};

// ---------------------------------------------------------------------------
// execution: the worker-facing service
// ---------------------------------------------------------------------------

/** The attempt a worker (the holder) holds on a live job of the owner's, and what it has made. */
const held = {} as { jobId: string; baitJobId: string; queue: string; attemptId: string; fence: bigint; holderIncarnation: string; holderName: string; effectId: string; effectKey: string; intruderJobId: string; intruderIncarnation: string; intruderAttempt: Ref; siblingIncarnation: string };

/** How an intruding worker names an attempt it does not hold. */
type Ref = { attemptId: string; fence: bigint; workerIncarnation: string };
/**
 * The two ways a worker without authority names an attempt: `stolen`, the
 * holder's whole ref (attempt, fence and the holder's incarnation, of
 * another subject); `own`, the holder's attempt and fence with its own
 * incarnation; `ownAttempt`, the intruder's own live attempt on a job of
 * its own, naming the holder's effect (or its key) instead of a missing one;
 * `sibling`, like `own` but from another incarnation of the holder's subject.
 * Each has a live and a missing form.
 */
const REFS = {
  stolen: {
    live: (): Ref => ({ attemptId: held.attemptId, fence: held.fence, workerIncarnation: held.holderIncarnation }),
    missing: (): Ref => ({ attemptId: MISSING.attemptId, fence: held.fence, workerIncarnation: MISSING.incarnation }),
  },
  own: {
    live: (): Ref => ({ attemptId: held.attemptId, fence: held.fence, workerIncarnation: held.intruderIncarnation }),
    missing: (): Ref => ({ attemptId: MISSING.attemptId, fence: held.fence, workerIncarnation: held.intruderIncarnation }),
  },
  ownAttempt: {
    live: (): Ref => held.intruderAttempt,
    missing: (): Ref => held.intruderAttempt,
  },
  sibling: {
    live: (): Ref => ({ attemptId: held.attemptId, fence: held.fence, workerIncarnation: held.siblingIncarnation }),
    missing: (): Ref => ({ attemptId: MISSING.attemptId, fence: held.fence, workerIncarnation: held.siblingIncarnation }),
  },
} as const;
/** Who presents each kind of ref: `sibling` is another incarnation of the holder's own subject. */
const REF_CALLER: Record<keyof typeof REFS, 'intruder' | 'holder'> = { stolen: 'intruder', own: 'intruder', ownAttempt: 'intruder', sibling: 'holder' };

/** One execution RPC: its request about a live or missing target, and what an intruding worker is answered (the same for both). */
interface ExecutionCase {
  readonly request: (ref: Ref, live: boolean) => object;
  readonly project?: (response: any) => unknown;
  /** The intruder's answer per ref kind; `null` when the RPC names no attempt. */
  readonly intruder: Partial<Record<keyof typeof REFS, string>>;
}

const STALE_AUTHORITY = 'FailedPrecondition STALE_AUTHORITY';
const STALE_INCARNATION = 'FailedPrecondition STALE_INCARNATION';
const attemptCall = (extra: (live: boolean) => object = () => ({})) => (ref: Ref, live: boolean) => ({ attempt: ref, operationId: newOperationId(), ...extra(live) });

const EXECUTION_CASES: Record<string, ExecutionCase> = {
  // Names are per subject: registering the holder's name under another subject must not supersede the holder (checked at the end).
  'ExecutionService.RegisterWorker': {
    request: (_ref, live) => ({ workerName: live ? held.holderName : `bola-fresh-${unique()}`, queues: [held.queue], maxConcurrency: 1 }),
    project: (r) => r.generation,
    intruder: { stolen: 'OK' },
  },
  'ExecutionService.ClaimJobs': {
    request: (ref) => ({ workerIncarnation: ref.workerIncarnation, queues: [held.queue], maxJobs: 1, operationId: newOperationId() }),
    intruder: { stolen: STALE_INCARNATION },
  },
  'ExecutionService.RenewAttempt': { request: attemptCall(), intruder: { stolen: STALE_INCARNATION, own: STALE_AUTHORITY, sibling: STALE_AUTHORITY } },
  'ExecutionService.ReportProgress': { request: attemptCall(() => ({ progress: { completedUnits: 1n, totalUnits: 2n, message: 'bola' } })), intruder: { stolen: STALE_INCARNATION, own: STALE_AUTHORITY, sibling: STALE_AUTHORITY } },
  'ExecutionService.SaveCheckpoint': { request: attemptCall(() => ({ checkpoint: { step: 1 } })), intruder: { stolen: STALE_INCARNATION, own: STALE_AUTHORITY, sibling: STALE_AUTHORITY } },
  'ExecutionService.AppendEvents': { request: attemptCall(() => ({ events: [{ type: 'worker.bola', payload: { n: 1 } }] })), intruder: { stolen: STALE_INCARNATION, own: STALE_AUTHORITY, sibling: STALE_AUTHORITY } },
  'ExecutionService.AckSignals': { request: attemptCall(() => ({ upToSequence: 1n })), intruder: { stolen: STALE_INCARNATION, own: STALE_AUTHORITY, sibling: STALE_AUTHORITY } },
  'ExecutionService.RequestApproval': { request: attemptCall(() => ({ prompt: 'may I?' })), intruder: { stolen: STALE_INCARNATION, own: STALE_AUTHORITY, sibling: STALE_AUTHORITY } },
  'ExecutionService.ReportOutcome': { request: attemptCall(() => ({ outcome: { case: 'success', value: { result: { n: 1 } } } })), intruder: { stolen: STALE_INCARNATION, own: STALE_AUTHORITY, sibling: STALE_AUTHORITY } },
  'ExecutionService.BeginEffect': {
    // Live: the key of the holder's effect, with another digest. Effect keys belong to a job: the intruder's own job makes its own effect.
    request: attemptCall((live) => ({ kind: 'bola.charge', idempotencyKey: live ? held.effectKey : newIdempotencyKey('bola-effect'), inputDigest: digestOf(1) })),
    project: (r) => [r.effect?.jobId === held.intruderJobId, r.disposition],
    intruder: { stolen: STALE_INCARNATION, own: STALE_AUTHORITY, sibling: STALE_AUTHORITY, ownAttempt: 'OK' },
  },
  'ExecutionService.AdvanceEffect': {
    request: attemptCall((live) => ({ effectId: live ? held.effectId : MISSING.effectId, expectedRevision: 1n, transition: { case: 'signed', value: { externalId: 'bola' } } })),
    // With its own live attempt, the holder's effect is as unknown to the intruder as a missing one.
    intruder: { stolen: STALE_INCARNATION, own: STALE_AUTHORITY, sibling: STALE_AUTHORITY, ownAttempt: 'NotFound NOT_FOUND' },
  },
  'ExecutionService.ListRecoverableEffects': { request: (ref) => ({ attempt: ref, limit: 10 }), intruder: { stolen: STALE_INCARNATION, own: STALE_AUTHORITY, sibling: STALE_AUTHORITY } },
  // The worker session carries the attempt calls above: an outcome on it is refused exactly as ReportOutcome is.
  'ExecutionService.Work': {
    request: (ref, live) => ({ callId: 1n, call: { case: 'reportOutcome', value: attemptCall(() => ({ outcome: { case: 'success', value: { result: { n: 1 } } } }))(ref, live) } }),
    intruder: { stolen: STALE_INCARNATION, own: STALE_AUTHORITY, sibling: STALE_AUTHORITY },
  },
};

const qualified = (service: DescService, method: DescMethod) => `${service.name}.${method.name}`;

beforeAll(async () => {
  // No background loops: no reaper settles the held attempt and no deletion runner finishes the deletion mid-matrix.
  ({ cluster, sql } = await startClusterWithSql(startInProcessCluster, {
    databaseUrl: await createMigratedTestDatabase('bola matrix'),
    // The holder's attempt, claimed once here and never renewed, must stay live through the
    // whole matrix, which takes well over the default 30 s lease on a loaded machine.
    env: { state: { DOCKET_LEASE_MS: '600000' }, execution: { DOCKET_BACKGROUND_LOOPS: 'off' } },
  }));
  tokens.owner = await cluster.tokenFor('bola-owner', 'user');
  tokens.other = await cluster.tokenFor('bola-other', 'user');
  tokens.admin = await cluster.tokenFor('bola-admin', 'admin');
  tokens.worker = await cluster.tokenFor('bola-worker', 'worker');
  tokens.holder = await cluster.tokenFor('bola-holder', 'worker');
  tokens.intruder = await cluster.tokenFor('bola-intruder', 'worker');
  const now = Math.floor(Date.now() / 1000);
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const bad = async (subject: string, role: 'user' | 'worker') => ({
    anonymous: undefined,
    expired: await mintToken({ secret: cluster.secret, subject, role, ttlSeconds: -120 }),
    wrongSignature: await mintToken({ secret: randomBytes(32).toString('base64url'), subject, role, ttlSeconds: 600 }),
    algNone: `${part({ alg: 'none', typ: 'JWT' })}.${part({ sub: subject, role, exp: now + 3600 })}.`,
  });
  badTokens.front = await bad('bola-owner', 'user');
  badTokens.execution = await bad('bola-holder', 'worker');

  // The execution target: a RUNNING job of the owner's, held by the holder, with an effect begun; a QUEUED bait job in the same queue.
  held.queue = `bola-exec-${unique()}`;
  held.holderName = `bola-holder-${unique()}`;
  const owner = createClient(AdmissionService, transportFor(cluster.admission.url, 'grpc', tokens.owner));
  held.jobId = (await owner.submitJob({ idempotencyKey: newIdempotencyKey('bola-held'), queue: held.queue }))!.job!.id;
  const holder = createClient(ExecutionService, transportFor(cluster.execution.url, 'grpc', tokens.holder));
  held.holderIncarnation = (await holder.registerWorker({ workerName: held.holderName, queues: [held.queue], maxConcurrency: 1 })).workerIncarnation;
  const [assignment] = (await holder.claimJobs({ workerIncarnation: held.holderIncarnation, queues: [held.queue], maxJobs: 1, operationId: newOperationId() })).assignments;
  expect(assignment?.envelope?.jobId).toBe(held.jobId);
  held.attemptId = assignment!.authority!.attemptId;
  held.fence = assignment!.authority!.fence;
  const attempt = { attemptId: held.attemptId, fence: held.fence, workerIncarnation: held.holderIncarnation };
  held.effectKey = newIdempotencyKey('bola-effect');
  held.effectId = (await holder.beginEffect({ attempt, kind: 'bola.charge', idempotencyKey: held.effectKey, inputDigest: digestOf(0), operationId: newOperationId() })).effect!.effectId;
  // Another incarnation of the holder's own subject, under another name: it does not supersede the holder.
  held.siblingIncarnation = (await holder.registerWorker({ workerName: `bola-sibling-${unique()}`, queues: [held.queue], maxConcurrency: 1 })).workerIncarnation;
  held.baitJobId = (await owner.submitJob({ idempotencyKey: newIdempotencyKey('bola-bait'), queue: held.queue }))!.job!.id;
  const intruder = createClient(ExecutionService, transportFor(cluster.execution.url, 'grpc', tokens.intruder));
  // The intruder holds a live attempt of its own, on a job in a queue of its own.
  const elsewhere = `bola-elsewhere-${unique()}`;
  held.intruderIncarnation = (await intruder.registerWorker({ workerName: `bola-intruder-${unique()}`, queues: [elsewhere], maxConcurrency: 1 })).workerIncarnation;
  held.intruderJobId = (await owner.submitJob({ idempotencyKey: newIdempotencyKey('bola-intruders'), queue: elsewhere }))!.job!.id;
  const [own] = (await intruder.claimJobs({ workerIncarnation: held.intruderIncarnation, queues: [elsewhere], maxJobs: 1, operationId: newOperationId() })).assignments;
  expect(own?.envelope?.jobId).toBe(held.intruderJobId);
  held.intruderAttempt = { attemptId: own!.authority!.attemptId, fence: own!.authority!.fence, workerIncarnation: held.intruderIncarnation };
}, 60_000);

afterAll(stopClustersWithSql);

describe('the matrix covers every public RPC', () => {
  it('has a case for every method of the admission, events and execution descriptors, and none for a method that does not exist', () => {
    const front = [AdmissionService, EventService].flatMap((service) => service.methods.map((method) => qualified(service, method)));
    const execution = ExecutionService.methods.map((method) => qualified(ExecutionService, method));
    expect(Object.keys(FRONT_CASES).sort()).toEqual(front.sort());
    expect(Object.keys(EXECUTION_CASES).sort()).toEqual(execution.sort());
  });
});

describe('admission and events', () => {
  for (const service of [AdmissionService, EventService]) {
    for (const method of service.methods) {
      const name = qualified(service, method);
      it(`${name}: invisible is missing, a worker is refused for its role, a bad token is unauthenticated, and no refusal writes`, async () => {
        const rpc = FRONT_CASES[name];
        if (rpc === undefined) throw new Error(`no BOLA case for ${name}`);
        const url = service === AdmissionService ? cluster.admission.url : cluster.events.url;
        const call = (target: JobTarget, token: string | undefined) => invoke(service, url, method, rpc.request(target), token, rpc.project ?? (() => 'response'));
        const live = await (rpc.live ?? ownersJob)();
        const adminsLive = await (rpc.live ?? ownersJob)();
        const before = await stored([live.jobId]);

        // Another user: a live job of the owner's answers exactly as a missing one.
        const otherLive = await call(live, tokens.other);
        const otherMissing = await call(missingTarget(), tokens.other);
        expect([name, 'other', summary(otherLive)]).toEqual([name, 'other', rpc.other]);
        expect(otherLive).toEqual(otherMissing);
        for (const [probe, { request, other }] of Object.entries(rpc.probes ?? {})) {
          const probed = (target: JobTarget) => invoke(service, url, method, request(target), tokens.other, rpc.project ?? (() => 'response'));
          const [probedLive, probedMissing] = [await probed(live), await probed(missingTarget())];
          expect([name, probe, 'other', summary(probedLive)]).toEqual([name, probe, 'other', other ?? rpc.other]);
          expect([name, probe, probedLive]).toEqual([name, probe, probedMissing]);
        }

        // A worker: PERMISSION_DENIED, bare, the same for both.
        for (const target of [live, missingTarget()]) {
          expect([name, 'worker', await call(target, tokens.worker)]).toEqual([name, 'worker', { ok: false, failure: PERMISSION_DENIED }]);
        }
        // Every bad token, even one naming the owner: the one bare UNAUTHENTICATED.
        for (const bad of BAD_TOKENS) {
          for (const target of [live, missingTarget()]) {
            expect([name, bad, await call(target, badTokens.front[bad])]).toEqual([name, bad, { ok: false, failure: UNAUTHENTICATED }]);
          }
        }
        expect(await stored([live.jobId]), `${name}: a refused call changed the job`).toEqual(before);

        // The probes are answered differently to the owner, so they would have shown a check made in the wrong order.
        for (const [probe, { request, owner }] of Object.entries(rpc.probes ?? {})) {
          const answer = await invoke(service, url, method, request(live), tokens.owner, rpc.project ?? (() => 'response'));
          expect([name, probe, 'owner', summary(answer)]).toEqual([name, probe, 'owner', owner]);
        }
        expect(await stored([live.jobId]), `${name}: a refused probe changed the job`).toEqual(before);

        // The owner, on a missing job, is answered what the other user was: the answer carries nothing of whose job it is.
        const ownerMissing = await call(missingTarget(), tokens.owner);
        const ownersRequest = rpc.request(live);
        const ownerLive = await invoke(service, url, method, ownersRequest, tokens.owner, rpc.project ?? (() => 'response'));
        expect([name, 'owner', summary(ownerLive), summary(ownerMissing)]).toEqual([name, 'owner', ...rpc.owner]);
        if (rpc.other === NOT_FOUND) expect(ownerMissing).toEqual(otherMissing);
        if (rpc.owner[0] === ADMIN_ONLY) expect(await stored([live.jobId]), `${name}: a refused call changed the job`).toEqual(before);

        const adminLive = await call(adminsLive, tokens.admin);
        const adminMissing = await call(missingTarget(), tokens.admin);
        expect([name, 'admin', summary(adminLive), summary(adminMissing)]).toEqual([name, 'admin', ...rpc.admin]);
        if (rpc.admin[1] === NOT_FOUND && rpc.other === NOT_FOUND) expect(adminMissing).toEqual(otherMissing);

        // After the owner's call has moved the job on (cancelled, paused, decided, ...), another user still learns nothing,
        // and replaying the owner's exact request, idempotency key included, replays nothing of the owner's.
        if (rpc.other === NOT_FOUND || rpc.other === ADMIN_ONLY) {
          const after = await stored([live.jobId]);
          const otherAfter = await call(live, tokens.other);
          const otherReplay = await invoke(service, url, method, ownersRequest, tokens.other, rpc.project ?? (() => 'response'));
          expect([name, 'other after the owner', otherAfter]).toEqual([name, 'other after the owner', otherMissing]);
          expect([name, "other replaying the owner's request", otherReplay]).toEqual([name, "other replaying the owner's request", otherMissing]);
          expect(await stored([live.jobId]), `${name}: a refused call changed the job`).toEqual(after);
        }
      });
    }
  }

  it('answers another user about a CANCELLED, SOFT_DELETED or HARD_DELETING job of the owner\'s exactly as about a missing one', async () => {
    const owner = createClient(AdmissionService, transportFor(cluster.admission.url, 'grpc', tokens.owner));
    const cancelled = await ownersJob();
    await owner.cancelJob({ idempotencyKey: key(), jobId: cancelled.jobId });
    const softDeleted = await ownersJob();
    await owner.cancelJob({ idempotencyKey: key(), jobId: softDeleted.jobId });
    await owner.softDeleteJob({ idempotencyKey: key(), jobId: softDeleted.jobId });
    const hardDeleting = await ownersDeletion();
    const jobs = { cancelled, softDeleted, hardDeleting };
    const before = await stored(Object.values(jobs).map((job) => job.jobId));
    const names = ['AdmissionService.GetJob', 'AdmissionService.CancelJob', 'AdmissionService.RestoreJob', 'AdmissionService.SoftDeleteJob', 'AdmissionService.HardDeleteJob', 'AdmissionService.RetryJob', 'AdmissionService.SendSignal', 'EventService.ReadJobEvents', 'EventService.StreamJobEvents'];
    for (const name of names) {
      const [serviceName, methodName] = name.split('.') as [string, string];
      const service = serviceName === 'EventService' ? EventService : AdmissionService;
      const method = service.methods.find((m) => m.name === methodName)!;
      const url = service === EventService ? cluster.events.url : cluster.admission.url;
      const rpc = FRONT_CASES[name]!;
      const missing = await invoke(service, url, method, rpc.request(missingTarget()), tokens.other, () => 'response');
      expect([name, summary(missing)]).toEqual([name, NOT_FOUND]);
      for (const [state, target] of Object.entries(jobs)) {
        expect([name, state, await invoke(service, url, method, rpc.request(target), tokens.other, () => 'response')]).toEqual([name, state, missing]);
      }
    }
    expect(await stored(Object.values(jobs).map((job) => job.jobId))).toEqual(before);
    // The owner still sees each of them, so the answers above were about jobs that exist.
    for (const target of Object.values(jobs)) expect((await owner.getJob({ jobId: target.jobId })).job?.id).toBe(target.jobId);
  });

  it('lets the owner and the admin see the live job where another user sees nothing (the positive side of the empty answers)', async () => {
    const live = await ownersJob();
    const list = async (token: string) =>
      (await createClient(AdmissionService, transportFor(cluster.admission.url, 'grpc', token)).listJobs({ filter: { queue: live.queue } })).jobs.map((job) => job.id);
    expect(await list(tokens.owner)).toEqual([live.jobId]);
    expect(await list(tokens.admin)).toEqual([live.jobId]);
    expect(await list(tokens.other)).toEqual([]);
    const replay = await createClient(AdmissionService, transportFor(cluster.admission.url, 'grpc', tokens.owner)).submitJob({ idempotencyKey: live.submitKey, queue: live.queue, input: { n: 1 } });
    expect([replay.replayed, replay.job?.id]).toEqual([true, live.jobId]);
    const othersSubmit = await createClient(AdmissionService, transportFor(cluster.admission.url, 'grpc', tokens.other)).submitJob({ idempotencyKey: live.submitKey, queue: live.queue, input: { n: 1 } });
    expect([othersSubmit.replayed, othersSubmit.job?.owner]).toEqual([false, 'bola-other']);
    expect(othersSubmit.job?.id).not.toBe(live.jobId);
  });
});

describe('execution', () => {
  for (const method of ExecutionService.methods) {
    const name = qualified(ExecutionService, method);
    it(`${name}: users and admins are refused for their role, a worker without authority cannot tell a live attempt from a missing one, a bad token is unauthenticated, and no refusal writes`, async () => {
      const rpc = EXECUTION_CASES[name];
      if (rpc === undefined) throw new Error(`no BOLA case for ${name}`);
      const call = (ref: Ref, live: boolean, token: string | undefined) =>
        invoke(ExecutionService, cluster.execution.url, method, rpc.request(ref, live), token, rpc.project ?? (() => 'response'));
      const before = await stored([held.jobId, held.baitJobId]);

      for (const who of ['owner', 'other', 'admin'] as const) {
        for (const live of [true, false]) {
          const ref = live ? REFS.stolen.live() : REFS.stolen.missing();
          expect([name, who, live, await call(ref, live, tokens[who])]).toEqual([name, who, live, { ok: false, failure: PERMISSION_DENIED }]);
        }
      }
      for (const bad of BAD_TOKENS) {
        for (const live of [true, false]) {
          const ref = live ? REFS.stolen.live() : REFS.stolen.missing();
          expect([name, bad, live, await call(ref, live, badTokens.execution[bad])]).toEqual([name, bad, live, { ok: false, failure: UNAUTHENTICATED }]);
        }
      }
      for (const [kind, expected] of Object.entries(rpc.intruder) as [keyof typeof REFS, string][]) {
        const live = await call(REFS[kind].live(), true, tokens[REF_CALLER[kind]]);
        const missing = await call(REFS[kind].missing(), false, tokens[REF_CALLER[kind]]);
        expect([name, kind, summary(live)]).toEqual([name, kind, expected]);
        expect([name, kind, live]).toEqual([name, kind, missing]);
      }
      expect(await stored([held.jobId, held.baitJobId]), `${name}: a refused call changed a job`).toEqual(before);
    });
  }

  it('leaves the holder its attempt: the ref the intruders named was live all along', async () => {
    const holder = createClient(ExecutionService, transportFor(cluster.execution.url, 'grpc', tokens.holder));
    const attempt = { attemptId: held.attemptId, fence: held.fence, workerIncarnation: held.holderIncarnation };
    const effects = await holder.listRecoverableEffects({ attempt, limit: 10 });
    expect(effects.effects.map((effect) => effect.effectId)).toEqual([held.effectId]);
    const renewed = await holder.renewAttempt({ attempt, operationId: newOperationId() });
    expect(renewed.leaseExpiresAt).toBeDefined();
    const { rows } = await sql.query<{ status: string; current_attempt_id: string }>('select status, current_attempt_id from jobs where id = any($1) order by id', [[held.jobId]]);
    expect(rows).toEqual([{ status: 'RUNNING', current_attempt_id: held.attemptId }]);
  });
});

import { createHash } from 'node:crypto';
import { toBinary } from '@bufbuild/protobuf';
import type pg from 'pg';
import { DocketError, GENESIS_HASH, newId, type IdempotencyKey, type RequestDigest, type ValidJobSpec } from '@docket/contracts';
import { JobSchema, type Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { admitBatch, admitBatchAndCommit, bumpChildCounts, readBindings, type AdmissionRow, type BoundRecord } from '../db/queries/admissions.js';
import { lockParents, rewriteAdmissionResponses, type ParentRow } from '../db/queries/dependencies.js';
import { UNTOUCHED_JOB_COLUMNS, type JobRow, type NewJobRow } from '../db/queries/jobs.js';
import { lockUniqueScopes, readActiveHolders, uniqueScopeName, type UniqueScope } from '../db/queries/unique-keys.js';
import type { JsonObject } from '../db/tables/index.js';
import { inWriteTransaction } from '../db/write-transaction.js';
import { chainEvents } from '../journal/chain-events.js';
import { dependencyStart, isRefused, type DependencyStart } from './admission-dependencies.js';
import { settleChildren } from '../transitions/dependency-settlement.js';
import type { ItemOutcome } from '@docket/service-kit';
import type { MutationOutcome } from './idempotent-mutation.js';
import { bindingVanished, idempotencyConflict, replayBinding } from './idempotent-replay.js';
import { projectJob } from '../reads/job-projection.js';

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
export interface AdmissionOutcome extends MutationOutcome {
  /**
   * `job` encoded (`toBinary(JobSchema, job)`) when the batch holds those
   * bytes already: the stored response of a job it admitted, or of the
   * binding it replayed. An AdmitJobs answer carries them as they are.
   */
  readonly encodedJob?: Uint8Array;
}

/**
 * Decides a batch of admissions (SPEC section 3) in one transaction with a
 * fixed number of round trips, whatever the batch size: for every key that
 * had no live binding, the binding, the job row, its `job.admitted` event
 * (sequence 1), its feed entry and the complete response commit together
 * (see `admitBatch`); every other item replays the stored response or is
 * IDEMPOTENCY_CONFLICT. Concurrent duplicates from any number of processes
 * create exactly one job. Items of one batch that share a key are decided
 * once, by the first of them (see `answer`). If the
 * transaction fails, no item of the batch was acknowledged.
 */
export async function admitJobs(pool: pg.Pool, commands: readonly AdmitJobCommand[]): Promise<ItemOutcome<AdmissionOutcome>[]> {
  const plan = planAdmissions(commands);
  const decided = await inWriteTransaction(
    pool,
    async (client, now) => {
      const parents = await lockParents(client, [...new Set(plan.leaders.flatMap((command) => command.spec.dependsOn))]);
      return decideKeys(client, plan.leaders.map((command, index) => admissionCandidate(command, index, now, parents)), now);
    },
    { acknowledgedJobIds: admittedJobIds },
  );
  return commands.map((command, index) => answer(decided[plan.leaderOf[index] as number] as KeyDecision, command, plan.leaders[plan.leaderOf[index] as number] === command));
}

/**
 * Decides every key of the batch. Without `unique_while_active` keys that
 * is one batch statement (and one read of the bindings it did not make).
 * With them, their scopes are locked first, and the batch is decided in
 * rounds that each hold at most one item per scope: before each round the
 * scopes' active holders are read (seeing the rounds before), and an item
 * whose scope is held binds its key to the holder instead of creating a job.
 */
async function decideKeys(client: pg.ClientBase, all: readonly AdmissionCandidate[], now: Date): Promise<KeyDecision[]> {
  const decisions: KeyDecision[] = [];
  const candidates = await decideRefused(client, all, decisions);
  const scoped = candidates.filter((candidate) => candidate.scope !== undefined).map((candidate) => candidate.scope as UniqueScope);
  await lockUniqueScopes(client, scoped);
  let pending = candidates;
  while (pending.length > 0) {
    const round: AdmissionCandidate[] = [];
    const later: AdmissionCandidate[] = [];
    const inRound = new Set<string>();
    for (const candidate of pending) {
      const name = candidate.scope && uniqueScopeName(candidate.scope);
      if (name !== undefined && inRound.has(name)) later.push(candidate);
      else {
        if (name !== undefined) inRound.add(name);
        round.push(candidate);
      }
    }
    const holders = await readActiveHolders(client, round.flatMap((candidate) => (candidate.scope ? [candidate.scope] : [])));
    const rows = round.map((candidate) => {
      const holder = candidate.scope && holders.get(uniqueScopeName(candidate.scope));
      return holder ? { candidate, row: deduplicatedRow(candidate.row, holder), holder } : { candidate, row: candidate.row, holder: undefined };
    });
    // The last round, with no children to count on their parents, commits with its write; the bindings it did not make are committed ones, read after.
    const last = later.length === 0 && rows.every((item) => item.row.edges.length === 0);
    const bound = await (last ? admitBatchAndCommit : admitBatch)(client, rows.map((item) => item.row), now, GENESIS_HASH);
    const children = rows.filter((item) => bound.has(item.row.item_no) && !item.row.deduplicated && item.row.edges.length > 0);
    const settledAtOnce = await admitChildren(client, children.map((item) => item.candidate), now);
    const pendingBindings = rows.filter((item) => !bound.has(item.row.item_no)).map((item) => item.row);
    const bindings = new Map((await readBindings(client, pendingBindings)).map((record) => [scopeOf(record), record]));
    for (const { candidate, row, holder } of rows) {
      decisions[candidate.index] = bound.has(row.item_no)
        ? {
            admitted: admittedOutcome(candidate, holder, settledAtOnce.get(candidate.row.job_id)),
            digest: candidate.command.digest,
          }
        : { bound: bindings.get(scopeOf(row)) };
    }
    pending = later;
  }
  return decisions;
}

/** What admitting `candidate` answers: its job, the active job holding its unique key, or the job as its failed parent settled it. */
function admittedOutcome(candidate: AdmissionCandidate, holder: JobRow | undefined, settled: Job | undefined): AdmissionOutcome {
  const outcome = { replayed: false, idempotencyExpiresAt: candidate.expiresAt, deduplicated: holder !== undefined };
  if (holder) return { ...outcome, job: projectJob(holder) };
  if (settled) return { ...outcome, job: settled };
  return { ...outcome, job: candidate.job, encodedJob: candidate.encodedJob };
}

/**
 * Candidates refused by their parents (missing or foreign) are decided
 * first, without a row: a key already bound replays (its parents were
 * checked when it was bound), any other is that item's NOT_FOUND. Returns
 * the candidates left to admit.
 */
async function decideRefused(client: pg.ClientBase, candidates: readonly AdmissionCandidate[], decisions: KeyDecision[]): Promise<AdmissionCandidate[]> {
  const refused = candidates.filter((candidate) => candidate.refusal !== undefined);
  if (refused.length === 0) return [...candidates];
  const bindings = new Map((await readBindings(client, refused.map((candidate) => candidate.row))).map((record) => [scopeOf(record), record]));
  for (const candidate of refused) {
    const record = bindings.get(scopeOf(candidate.row));
    decisions[candidate.index] = record ? { bound: record } : { refused: candidate.refusal as DocketError };
  }
  return candidates.filter((candidate) => candidate.refusal === undefined);
}

/**
 * What admitting children does beyond the batch statement: their parents'
 * `child_count` grows, and a CANCEL child of a parent that had already
 * failed is cancelled in this transaction (see `settleChildren`), its
 * stored response rewritten so that a replay answers the same. Returns the
 * jobs of those cancelled children as answered.
 */
async function admitChildren(client: pg.ClientBase, children: readonly AdmissionCandidate[], now: Date): Promise<Map<string, ReturnType<typeof projectJob>>> {
  const answered = new Map<string, ReturnType<typeof projectJob>>();
  if (children.length === 0) return answered;
  await bumpChildCounts(client, children.flatMap((child) => child.row.edges.map((edge) => edge.parent_job_id)));
  const failedParents = children.flatMap((child) => child.start?.failedParents ?? []);
  if (failedParents.length === 0) return answered;
  const changed = await settleChildren(client, [...new Map(failedParents.map((parent) => [parent.jobId, parent])).values()], now);
  const rewritten = children.flatMap((child) => {
    const row = changed.get(child.row.job_id);
    if (!row) return [];
    const job = projectJob(row);
    answered.set(row.id, job);
    const { subject, operation, key_hash } = child.row;
    return [{ subject, operation, key_hash, response: Buffer.from(toBinary(JobSchema, job)).toString('base64') }];
  });
  await rewriteAdmissionResponses(client, rewritten);
  return answered;
}

/** `row` bound to `holder`, the active job with its unique key: the stored response is that job. */
function deduplicatedRow(row: AdmissionRow, holder: JobRow): AdmissionRow {
  return { ...row, job_id: holder.id, response: Buffer.from(toBinary(JobSchema, projectJob(holder))).toString('base64'), deduplicated: true };
}

/** How a batch decided one key: this batch admitted it (for `digest`), or it was already bound (the record, if still there). */
/** The jobs a batch created (not replays, not deduplications): what the rollback guard checks after a failover. */
function admittedJobIds(decisions: readonly KeyDecision[]): string[] {
  return decisions.flatMap((decision) => ('admitted' in decision && !decision.admitted.deduplicated ? [decision.admitted.job.id] : []));
}

type KeyDecision =
  | { readonly admitted: AdmissionOutcome; readonly digest: RequestDigest }
  | { readonly bound: BoundRecord | undefined }
  | { readonly refused: DocketError };

/**
 * One item's answer from its key's decision: the admitting item gets the
 * new job; an item that shares the key replays it (IDEMPOTENCY_CONFLICT
 * when its digest differs); a key that was already bound answers each
 * item against the stored record, by that item's own digest.
 */
function answer(decision: KeyDecision, command: AdmitJobCommand, admitting: boolean): ItemOutcome<AdmissionOutcome> {
  if ('refused' in decision) return { ok: false, error: decision.refused };
  if ('admitted' in decision) {
    if (admitting) return { ok: true, value: decision.admitted };
    if (command.digest !== decision.digest) return { ok: false, error: idempotencyConflict() };
    return { ok: true, value: { ...decision.admitted, replayed: true } };
  }
  return decision.bound ? replay(decision.bound, command.digest) : { ok: false, error: bindingVanished() };
}

/** Which items decide (the first of each key) and which item each follows. */
export interface AdmissionPlan {
  readonly leaders: readonly AdmitJobCommand[];
  /** For every item, the index in `leaders` of the item that decides its key. */
  readonly leaderOf: readonly number[];
}

/** Groups a batch by (subject, operation, key): one statement row per key. Pure. */
export function planAdmissions(commands: readonly AdmitJobCommand[]): AdmissionPlan {
  const byScope = new Map<string, number>();
  const leaders: AdmitJobCommand[] = [];
  const leaderOf = commands.map((command) => {
    const scope = `${command.subject}\u0000${command.operation}\u0000${command.key.reveal()}`;
    let leader = byScope.get(scope);
    if (leader === undefined) {
      leader = leaders.push(command) - 1;
      byScope.set(scope, leader);
    }
    return leader;
  });
  return { leaders, leaderOf };
}

interface AdmissionCandidate {
  readonly command: AdmitJobCommand;
  /** The candidate's place among the batch's leaders. */
  readonly index: number;
  /** Its `unique_while_active` scope, if it has a key. */
  readonly scope: UniqueScope | undefined;
  readonly row: AdmissionRow;
  readonly job: Job;
  /** `job` encoded: its stored response. */
  readonly encodedJob: Uint8Array;
  readonly expiresAt: Date;
  /** Where the job starts among its parents (undefined: it has none). */
  readonly start: DependencyStart | undefined;
  /** Why its parents refuse it (NOT_FOUND), if they do. */
  readonly refusal: DocketError | undefined;
}

const NO_PARENTS: DependencyStart = { status: 'QUEUED', pendingParentCount: 0, edges: [], failedParents: [] };

function admissionCandidate(command: AdmitJobCommand, index: number, now: Date, parents: ReadonlyMap<string, ParentRow>): AdmissionCandidate {
  const { spec } = command;
  const jobId = newId('job');
  const payload = admittedPayload(spec);
  const [event] = chainEvents({ jobId, requestDigest: command.digest, sequence: 0n, hash: GENESIS_HASH }, [{ type: 'job.admitted', payload }], now).rows;
  const eventHash = event?.hash as string;
  const started = spec.dependsOn.length === 0 ? NO_PARENTS : dependencyStart(spec, command.subject, parents);
  const refusal = isRefused(started) ? started : undefined;
  const start = isRefused(started) ? NO_PARENTS : started;
  const job = projectJob(newJobRow(jobId, command, eventHash, now, start));
  const encodedJob = toBinary(JobSchema, job);
  const expiresAt = new Date(now.getTime() + command.ttlMs);
  return {
    command,
    index,
    scope: spec.uniqueKey === undefined ? undefined : { owner: command.subject, queue: spec.queue, unique_key: spec.uniqueKey },
    job,
    encodedJob,
    expiresAt,
    start: spec.dependsOn.length === 0 ? undefined : start,
    refusal,
    row: {
      item_no: index,
      subject: command.subject,
      operation: command.operation,
      key_hash: createHash('sha256').update(command.key.reveal()).digest('hex'),
      request_digest: command.digest,
      job_id: jobId,
      response: Buffer.from(encodedJob.buffer, encodedJob.byteOffset, encodedJob.byteLength).toString('base64'),
      expires_at: expiresAt.toISOString(),
      queue: spec.queue,
      label: spec.label,
      input: spec.input,
      priority: spec.priority,
      run_after: spec.runAfter ? spec.runAfter.toISOString() : null,
      max_attempts: spec.maxAttempts,
      initial_backoff_ms: spec.initialBackoffMs,
      max_backoff_ms: spec.maxBackoffMs,
      lost_attempt_policy: spec.lostAttemptPolicy,
      event_payload: payload,
      event_hash: eventHash,
      unique_key: spec.uniqueKey ?? null,
      attempt_timeout_ms: spec.attemptTimeoutMs ?? null,
      heartbeat_timeout_ms: spec.heartbeatTimeoutMs ?? null,
      concurrency_key: spec.concurrencyKey ?? null,
      deduplicated: false,
      status: start.status,
      parent_ids: spec.dependsOn,
      pending_parent_count: start.pendingParentCount,
      on_parent_failure: spec.onParentFailure,
      edges: start.edges,
    },
  };
}

function newJobRow(id: string, command: AdmitJobCommand, headHash: string, now: Date, start: DependencyStart): NewJobRow {
  const { spec } = command;
  return {
    id,
    owner: command.subject,
    queue: spec.queue,
    label: spec.label,
    input: spec.input,
    priority: spec.priority,
    revision: 1n,
    status: start.status,
    lifecycle: 'ACTIVE',
    request_digest: command.digest,
    run_after: spec.runAfter ?? null,
    max_attempts: spec.maxAttempts,
    initial_backoff_ms: BigInt(spec.initialBackoffMs),
    max_backoff_ms: BigInt(spec.maxBackoffMs),
    lost_attempt_policy: spec.lostAttemptPolicy,
    attempt_count: 0,
    fence: 0n,
    progress: null,
    checkpoint: null,
    result: null,
    failure: null,
    event_count: 1n,
    head_hash: headHash,
    created_at: now,
    updated_at: now,
    current_attempt_id: null,
    current_worker_incarnation: null,
    lease_expires_at: null,
    cancel_requested: false,
    pause_requested: false,
    ...UNTOUCHED_JOB_COLUMNS,
    not_before: null,
    unique_key: spec.uniqueKey ?? null,
    attempt_timeout_ms: spec.attemptTimeoutMs === undefined ? null : BigInt(spec.attemptTimeoutMs),
    heartbeat_timeout_ms: spec.heartbeatTimeoutMs === undefined ? null : BigInt(spec.heartbeatTimeoutMs),
    concurrency_key: spec.concurrencyKey ?? null,
    parent_ids: [...spec.dependsOn],
    pending_parent_count: start.pendingParentCount,
    on_parent_failure: spec.onParentFailure,
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
    input_sha256: createHash('sha256').update(spec.canonicalInput).digest('hex'),
    max_attempts: spec.maxAttempts,
    initial_backoff_ms: spec.initialBackoffMs,
    max_backoff_ms: spec.maxBackoffMs,
    lost_attempt_policy: spec.lostAttemptPolicy,
    run_after: spec.runAfter ? spec.runAfter.toISOString() : null,
    ...(spec.dependsOn.length === 0 ? {} : { depends_on: [...spec.dependsOn], on_parent_failure: spec.onParentFailure }),
  };
}

function scopeOf(scope: { readonly subject: string; readonly operation: string; readonly key_hash: string }): string {
  return `${scope.subject}\u0000${scope.operation}\u0000${scope.key_hash}`;
}

function replay(record: BoundRecord, digest: RequestDigest): ItemOutcome<AdmissionOutcome> {
  try {
    const { value, replayed, idempotencyExpiresAt } = replayBinding(record, digest, JobSchema);
    return { ok: true, value: { job: value, encodedJob: record.response, replayed, idempotencyExpiresAt, deduplicated: record.deduplicated } };
  } catch (error) {
    return { ok: false, error };
  }
}

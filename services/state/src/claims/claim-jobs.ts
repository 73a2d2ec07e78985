import { create } from '@bufbuild/protobuf';
import type pg from 'pg';
import { invalidField } from '@docket/contracts';
import {
  ClaimJobsRequestSchema,
  ClaimJobsResponseSchema,
  type Assignment,
  type ClaimJobsRequest,
  type ClaimJobsResponse,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import {
  lockClaimableJobs,
  lockKeyedClaimableJobs,
  claimQueuesStatement,
  lockedQueuesOf,
  type LockedQueues,
  nextRunAfter,
  readQueueRoom,
  serveQueueKeys,
  spendRateTokens,
  type QueueRoom,
} from '../db/queries/claims.js';
import type { JobRow } from '../db/queries/jobs.js';
import { claimContextOf, claimContextStatement, operationKeyOf, type ClaimContext } from '../db/queries/worker-call-reads.js';
import type { IncarnationRow } from '../db/queries/workers.js';
import type { Opening } from '../db/write-transaction.js';
import { readOutstandingSignals } from '../db/queries/signals.js';
import { readParentResults } from '../db/queries/dependencies.js';
import { staleIncarnation } from '../attempts/attempt-authority.js';
import { recordOperation } from '../worker-calls/attempt-report.js';
import type { ItemOutcome } from '@docket/service-kit';
import { JobWriteSet } from '../transitions/job-write-set.js';
import type { ExecutionSettings } from '../workers/register-worker.js';
import { operationDigest, replayOperation } from '../worker-calls/worker-operation.js';
import { recordQuarantines } from '../db/queries/quarantine.js';
import { KeyPicks, rotateAcrossKeys } from './keyed-queues.js';
import { earliest, nextRoomAt, spentBuckets } from './queue-room.js';
import { startAttempt } from './start-attempt.js';
import { quarantineCause, type QuarantineEntry } from '../journal/job-quarantine.js';
import type { FreedSlots } from './freed-slots.js';

/** The most jobs one claim hands out. */
export const MAX_JOBS_PER_CLAIM = 100;

/** What a claim that meets a job it cannot start records in `job_quarantine.task`. */
export const CLAIM_TASK = 'CLAIM_JOBS';

/** One claim attempt, checked (no waiting; the execution service long-polls around it). */
export interface ClaimCommand {
  readonly subject: string;
  readonly request: ClaimJobsRequest;
  readonly digest: string;
}

/** A claim's answer, and for an empty one when a job becomes claimable by time alone and where it looked. */
export interface ClaimOutcome {
  readonly response: ClaimJobsResponse;
  readonly nextClaimableAt: Date | undefined;
  readonly claimQueues: readonly string[];
}

/** Checks a ClaimJobs call's fields before anything is read. */
export function parseClaim(subject: string, request: ClaimJobsRequest): ClaimCommand {
  if (request.maxJobs < 0) throw invalidField('max_jobs', 'must not be negative');
  return { subject, request, digest: operationDigest('ClaimJobs', request.workerIncarnation, ClaimJobsRequestSchema, request) };
}

/**
 * The opening reads of a batch's claims, which travel with BEGIN
 * (`inWriteTransaction`): the claims' incarnations locked, with the
 * operations recorded for them (`claimContextStatement`), then the
 * limited queues' advisory locks and the incarnations' running jobs
 * (`claimQueuesStatement`).
 */
export function claimOpening(claims: readonly ClaimCommand[]): Opening<ClaimContext & LockedQueues> {
  return {
    statements: [
      claimContextStatement(claims.map(operationKey), claims.map((claim) => claim.request.workerIncarnation)),
      claimQueuesStatement(claims.map((claim) => ({ incarnation: claim.request.workerIncarnation, queues: claim.request.queues }))),
    ],
    read: ([context, queues]) => ({ ...claimContextOf(context), ...lockedQueuesOf(queues) }),
  };
}

/** A batch's claims as decided in its transaction, and the jobs they quarantined there. */
export interface DecidedClaims {
  readonly outcomes: ItemOutcome<ClaimOutcome>[];
  /** Jobs a claim met that cannot be started, recorded in `job_quarantine` by this transaction (newly). */
  readonly quarantined: readonly QuarantineEntry[];
}

/**
 * Decides a batch's claims in its open transaction, against their opening
 * reads (`claimOpening`): what they change goes into `writes`, which the
 * batch writes once at its end (`decideWorkerBatch`). The incarnations'
 * rows are locked (a registration superseding one waits for the claim, or
 * the claim finds it superseded: STALE_INCARNATION); a recorded operation
 * id replays its assignments. The limited queues' advisory locks are held
 * and the incarnations' running jobs and the queues' free slots counted,
 * less the slots this batch's reports give up (`freed`), so neither an
 * incarnation's own limit nor a queue's deployment-wide `max_concurrency`
 * is ever exceeded; claimable jobs are taken highest priority then oldest,
 * honouring `run_after`, with `FOR UPDATE SKIP LOCKED`, so no job goes to
 * two claimers, and never a job the batch's reports changed. Each claimed
 * job's fence grows by one, it gets an attempt, `attempt.started` and a
 * lease by the database clock. A claim that got jobs is recorded under its
 * operation id; an empty one is not, so retrying it claims afresh.
 *
 * A claim never fails for one bad job: a job that cannot be started for a
 * reason of its own (`quarantineCause`) is quarantined in the claim's
 * transaction and left out of its answer. Quarantined jobs are never
 * candidates again (`lockClaimableJobs`) and their rows stay as they were.
 */
export async function decideClaims(
  client: pg.ClientBase,
  settings: ExecutionSettings,
  claims: readonly ClaimCommand[],
  context: ClaimContext & LockedQueues,
  now: Date,
  writes: JobWriteSet,
  freed: FreedSlots,
): Promise<DecidedClaims> {
  const { incarnations, operations: recorded, held } = context;
  const decidedHere = new Map<string, { rpc: string; request_digest: string; response: Buffer }>();

  // 1. Who may claim where: the incarnation, replays, the queues named.
  const open = claims.map((claim): ItemOutcome<OpenClaim> => {
    try {
      const incarnation = incarnations.get(claim.request.workerIncarnation);
      if (!incarnation || incarnation.subject !== claim.subject || incarnation.superseded_at !== null) throw staleIncarnation();
      const queues = claimQueues(incarnation, claim.request.queues);
      return { ok: true, value: { claim, incarnation, queues } };
    } catch (error) {
      return { ok: false, error };
    }
  });
  const fresh = open.flatMap((item) => (item.ok && !recorded.has(operationKeyOf(operationKey(item.value.claim))) ? [item.value] : []));

  // 2. How much each may take, counted under the locks (the opening's second read), with what the batch's reports freed.
  const room = await readQueueRoom(client, context.limited, freed.byQueue);
  const remaining = new Map([...room].flatMap(([queue, { remaining: left }]) => (left === undefined ? [] : [[queue, left] as const])));
  const free = new Map(
    fresh.map((item) => {
      const id = item.incarnation.id;
      return [id, item.incarnation.max_concurrency - (held.get(id) ?? 0) + (freed.byIncarnation.get(id) ?? 0)];
    }),
  );

  // 3. The candidates, one locking read per distinct set of queues; never a job the batch already changed.
  const taken: string[] = [...writes.jobs.keys()];
  const picked = new Map<OpenClaim, JobRow[]>();
  const keyPicks = new KeyPicks();
  for (const group of groupByQueues(fresh)) {
    const wanted = group.reduce((sum, item) => sum + wantedBy(item, free), 0);
    const openQueues = group[0]?.queues.filter((queue) => (remaining.get(queue) ?? Number.POSITIVE_INFINITY) > 0) ?? [];
    const candidates = await claimableJobs(client, room, keyPicks, openQueues, wanted, taken);
    for (const item of group) {
      const jobs: JobRow[] = [];
      let budget = wantedBy(item, free);
      while (budget > 0 && candidates.length > 0) {
        const index = candidates.findIndex((job) => (remaining.get(job.queue) ?? Number.POSITIVE_INFINITY) > 0);
        if (index < 0) break;
        const [job] = candidates.splice(index, 1) as [JobRow];
        const left = remaining.get(job.queue);
        if (left !== undefined) remaining.set(job.queue, left - 1);
        jobs.push(job);
        taken.push(job.id);
        budget -= 1;
      }
      free.set(item.incarnation.id, (free.get(item.incarnation.id) ?? 0) - jobs.length);
      picked.set(item, jobs);
    }
  }

  // Rate-limited queues pay a token per job taken, and keyed queues record which keys they served, under their locks.
  await spendRateTokens(client, spentBuckets(room, [...picked.values()].flat()));
  await serveQueueKeys(client, keyPicks.served([...picked.values()].flat()));

  // 4. Every claim's answer, in batch order; claimed jobs' outstanding signals go in their envelopes.
  const inboxes = await readOutstandingSignals(client, [...picked.values()].flat());
  const parentResults = await readParentResults(client, [...picked.values()].flat());
  const emptyQueues = new Map<string, readonly string[]>();
  const quarantine: QuarantineEntry[] = [];
  const started = (incarnation: IncarnationRow, job: JobRow): Assignment[] => {
    try {
      return [startAttempt(writes, settings, incarnation, job, { inbox: inboxes.get(job.id) ?? [], parentResults: parentResults.get(job.id) ?? [] }, now)];
    } catch (error) {
      const errorClass = quarantineCause(error);
      if (errorClass === undefined) throw error;
      quarantine.push({ jobId: job.id, task: CLAIM_TASK, errorClass });
      return [];
    }
  };
  const decided = open.map((item): ItemOutcome<ClaimJobsResponse> => {
    if (!item.ok) return item;
    const { claim, incarnation } = item.value;
    try {
      const key = operationKeyOf(operationKey(claim));
      const earlier = recorded.get(key) ?? decidedHere.get(key);
      if (earlier) return { ok: true, value: replayOperation(earlier, 'ClaimJobs', claim.digest, ClaimJobsResponseSchema) };
      const jobs = picked.get(item.value) ?? [];
      const response = create(ClaimJobsResponseSchema, { assignments: jobs.flatMap((job) => started(incarnation, job)) });
      if (response.assignments.length > 0) {
        const call = { incarnation: incarnation.id, operationId: claim.request.operationId, rpc: 'ClaimJobs', digest: claim.digest, responseSchema: ClaimJobsResponseSchema };
        decidedHere.set(key, recordOperation(writes, call, response, now));
      } else {
        emptyQueues.set(queueSetKey(item.value.queues), item.value.queues);
      }
      return { ok: true, value: response };
    } catch (error) {
      return { ok: false, error };
    }
  });

  // 5. For empty claims, when their queues next have a job by time alone.
  const nextDue = new Map<string, Date | undefined>();
  for (const [setKey, queues] of emptyQueues) nextDue.set(setKey, earliest(await nextRunAfter(client, queues), nextRoomAt(room, queues, now)));
  const newlyQuarantined = await recordQuarantines(client, quarantine);
  const outcomes = decided.map((outcome, index): ItemOutcome<ClaimOutcome> => {
    if (!outcome.ok) return outcome;
    const item = open[index];
    const queues = item?.ok && outcome.value.assignments.length === 0 ? item.value.queues : [];
    return { ok: true, value: { response: outcome.value, nextClaimableAt: nextDue.get(queueSetKey(queues)), claimQueues: queues } };
  });
  return { outcomes, quarantined: quarantine.filter((entry) => newlyQuarantined.has(entry.jobId)) };
}

/**
 * The claimable jobs of `queues` for one group of claims, at most `wanted`:
 * those of plain queues highest priority then oldest (`lockClaimableJobs`),
 * and those of keyed queues (a policy with `per_key_concurrency`) rotated
 * across their keys (`lockKeyedClaimableJobs`, {@link rotateAcrossKeys}),
 * merged by priority, the order of equal priorities kept.
 */
async function claimableJobs(
  client: pg.ClientBase,
  room: ReadonlyMap<string, QueueRoom>,
  keyPicks: KeyPicks,
  queues: readonly string[],
  wanted: number,
  taken: readonly string[],
): Promise<JobRow[]> {
  const keyed = queues.filter((queue) => room.get(queue)?.perKey !== undefined);
  const plain = queues.filter((queue) => room.get(queue)?.perKey === undefined);
  const candidates = await lockClaimableJobs(client, plain, wanted, taken);
  for (const queue of keyed) {
    const found = await lockKeyedClaimableJobs(client, queue, room.get(queue)?.perKey ?? 0, wanted, taken);
    candidates.push(...keyPicks.admit(queue, rotateAcrossKeys(found)));
  }
  return keyed.length === 0 ? candidates : candidates.sort((a, b) => b.priority - a.priority);
}

/** A claim that may proceed: its incarnation (locked) and the queues it looks in. */
interface OpenClaim {
  readonly claim: ClaimCommand;
  readonly incarnation: IncarnationRow;
  readonly queues: readonly string[];
}

function operationKey(claim: ClaimCommand): { worker_incarnation: string; operation_id: string } {
  return { worker_incarnation: claim.request.workerIncarnation, operation_id: claim.request.operationId };
}

/** How many jobs a claim asks for now: its max_jobs (at least 1, at most 100), within its incarnation's free slots. */
function wantedBy(item: OpenClaim, free: ReadonlyMap<string, number>): number {
  return Math.max(0, Math.min(Math.max(item.claim.request.maxJobs, 1), MAX_JOBS_PER_CLAIM, free.get(item.incarnation.id) ?? 0));
}

function queueSetKey(queues: readonly string[]): string {
  return [...queues].sort().join('\u0000');
}

function groupByQueues(items: readonly OpenClaim[]): OpenClaim[][] {
  const groups = new Map<string, OpenClaim[]>();
  for (const item of items) {
    const key = queueSetKey(item.queues);
    groups.set(key, [...(groups.get(key) ?? []), item]);
  }
  return [...groups.values()];
}

function claimQueues(incarnation: IncarnationRow, requested: readonly string[]): string[] {
  if (requested.length === 0) return incarnation.queues;
  requested.forEach((queue, index) => {
    if (!incarnation.queues.includes(queue)) throw invalidField(`queues[${index}]`, 'must be one of the queues the worker registered');
  });
  return [...new Set(requested)];
}


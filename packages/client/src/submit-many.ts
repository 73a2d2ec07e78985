import { create, toBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { LIMITS } from '@docket/contracts';
import { SubmitJobRequestSchema, type AdmissionService, type SubmitJobRequest } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import type { Status } from '@docket/proto/google/rpc/status_pb.js';
import { callWithRetry, failureOfStatus, isRetryableFailure } from '@docket/client-kit';
import { DocketClientError, isDocketClientError } from './docket-client-error.js';
import { resolveIdempotencyKey } from './idempotency-key.js';
import { clientRetry, throwIfAborted, type RetryPolicy } from './retry-policy.js';

/** Bytes of a SubmitJobs request left for its framing around the items (the `items` tag and length of each). */
const ITEM_FRAMING_BYTES = 6;
/** Each call stays this far under the admission service's request limit. */
const REQUEST_HEADROOM_BYTES = 64 * 1024;

/** One job of {@link submitMany}: SubmitJob's fields, with its own `idempotencyKey` or none (a fresh one is drawn). */
export type BatchJob = Omit<MessageInitShape<typeof SubmitJobRequestSchema>, '$typeName'>;

/** One job's answer: its receipt, or the error SubmitJob would have thrown for it. */
export type SubmitManyResult =
  | { readonly ok: true; readonly job: Job; readonly replayed: boolean; readonly deduplicated: boolean; readonly idempotencyKey: string; readonly idempotencyExpiresAt: Date | undefined }
  | { readonly ok: false; readonly error: DocketClientError; readonly idempotencyKey: string };

/** Options of {@link submitMany}. */
export interface SubmitManyOptions {
  readonly signal?: AbortSignal;
  /** Called after each call with how many jobs have an answer so far, and how many there are. */
  readonly onProgress?: (answered: number, total: number) => void;
}

/** What {@link submitMany} needs of the client. */
export interface SubmitManyDependencies {
  readonly admission: Client<typeof AdmissionService>;
  readonly retry: RetryPolicy;
  readonly secrets: readonly string[];
}

interface Pending {
  readonly index: number;
  readonly request: SubmitJobRequest;
  readonly bytes: number;
}

/**
 * Admits jobs through SubmitJobs, in calls of at most 1,000 jobs and
 * under the admission service's request size, one call after another so
 * that jobs are decided in the order given (a later job with an earlier
 * job's key replays it). A job that names earlier jobs as parents
 * (`dependsOnItems`, indexes into `jobs`) is sent once they are answered,
 * naming them by job id (see `readyToSend`); one whose parent failed is
 * answered PARENT_ITEM_FAILED without being sent. Every job gets an answer, in order. A call that
 * fails as a whole, and the jobs of a call that came back with a
 * retryable error (UNAVAILABLE, DEADLINE_EXCEEDED, ...), are sent again
 * with the same keys under the client's retry policy: a job is admitted
 * once however many tries it takes. A job whose key is malformed is
 * answered INVALID_FIELD without being sent. Throws only CANCELLED, when
 * `signal` aborts.
 */
export async function submitMany(deps: SubmitManyDependencies, jobs: readonly BatchJob[], options: SubmitManyOptions = {}): Promise<SubmitManyResult[]> {
  const results: SubmitManyResult[] = new Array(jobs.length);
  const pending: Pending[] = [];
  jobs.forEach((job, index) => {
    let key: string;
    try {
      key = resolveIdempotencyKey(job.idempotencyKey);
    } catch (error) {
      if (!isDocketClientError(error)) throw error;
      results[index] = { ok: false, error, idempotencyKey: job.idempotencyKey ?? '' };
      return;
    }
    pending.push({ index, request: create(SubmitJobRequestSchema, { ...job, idempotencyKey: key }), bytes: 0 });
  });
  let answered = jobs.length - pending.length;
  for (let round = pending; round.length > 0; ) {
    const { ready, later } = readyToSend(round, results);
    for (const call of callsOf(ready)) {
      await submitCall(deps, call, results, options.signal);
      answered += call.length;
      options.onProgress?.(answered, jobs.length);
    }
    round = later;
  }
  return results;
}

/**
 * The jobs that can be sent now (pure but for `results`, where a job whose
 * parent failed gets PARENT_ITEM_FAILED): those whose `dependsOnItems`
 * parents have all been answered, rewritten to name them by job id after
 * `dependsOn`, which is how the service resolves and fingerprints them,
 * so a job's digest is the same however it is sent. A job also waits for
 * every earlier job with its key, so that the later one replays.
 */
function readyToSend(round: readonly Pending[], results: SubmitManyResult[]): { ready: Pending[]; later: Pending[] } {
  const ready: Pending[] = [];
  const later: Pending[] = [];
  const waitingKeys = new Set<string>();
  for (const job of round) {
    const parents = job.request.dependsOnItems;
    const unanswered = parents.some((parent) => results[parent] === undefined && parent < job.index);
    if (unanswered || waitingKeys.has(job.request.idempotencyKey)) {
      later.push(job);
      waitingKeys.add(job.request.idempotencyKey);
      continue;
    }
    const failed = parents.find((parent) => parent < job.index && results[parent]?.ok === false);
    if (failed !== undefined) {
      results[job.index] = {
        ok: false,
        error: new DocketClientError(Code.FailedPrecondition, 'PARENT_ITEM_FAILED', `SubmitJobs failed: PARENT_ITEM_FAILED: job ${failed} of the batch failed`, {
          metadata: { item: String(failed) },
        }),
        idempotencyKey: job.request.idempotencyKey,
      };
      continue;
    }
    // Indexes that name no earlier job stay as they are: the service refuses them (INVALID_ARGUMENT).
    const resolved = parents.filter((parent) => parent < job.index && parent >= 0);
    const request =
      resolved.length === 0
        ? job.request
        : create(SubmitJobRequestSchema, {
            ...job.request,
            dependsOn: [...job.request.dependsOn, ...resolved.map((parent) => (results[parent] as { readonly job: Job }).job.id)],
            dependsOnItems: parents.filter((parent) => !resolved.includes(parent)),
          });
    ready.push({ index: job.index, request, bytes: toBinary(SubmitJobRequestSchema, request).byteLength + ITEM_FRAMING_BYTES });
  }
  return { ready, later };
}

/** Consecutive runs of at most 1,000 jobs and at most the request limit (less headroom) each; a job larger than that goes alone. */
function callsOf(pending: readonly Pending[]): Pending[][] {
  const budget = LIMITS.admissionRequestBytes - REQUEST_HEADROOM_BYTES;
  const calls: Pending[][] = [];
  let current: Pending[] = [];
  let bytes = 0;
  for (const job of pending) {
    if (current.length > 0 && (current.length === LIMITS.submitJobsItems || bytes + job.bytes > budget)) {
      calls.push(current);
      current = [];
      bytes = 0;
    }
    current.push(job);
    bytes += job.bytes;
  }
  if (current.length > 0) calls.push(current);
  return calls;
}

/** One SubmitJobs call, with its retries; records an answer for every job of it. */
async function submitCall(deps: SubmitManyDependencies, call: readonly Pending[], results: SubmitManyResult[], signal: AbortSignal | undefined): Promise<void> {
  let unsettled = [...call];
  const secrets = [...deps.secrets, ...call.map((job) => job.request.idempotencyKey)];
  try {
    await callWithRetry(
      async (callOptions) => {
        const response = await deps.admission.submitJobs({ items: unsettled.map((job) => job.request) }, callOptions);
        if (response.results.length !== unsettled.length) throw new ConnectError('SubmitJobs answered a different number of results', Code.Internal);
        const retry: Pending[] = [];
        response.results.forEach((result, position) => {
          const job = unsettled[position] as Pending;
          const key = job.request.idempotencyKey;
          if (result.result.case === 'submitted') {
            const submitted = result.result.value;
            if (!submitted.job) throw new ConnectError('SubmitJobs answered an item without its job', Code.Internal);
            results[job.index] = {
              ok: true,
              job: submitted.job,
              replayed: submitted.replayed,
              deduplicated: submitted.deduplicated,
              idempotencyKey: key,
              idempotencyExpiresAt: submitted.idempotencyExpiresAt ? timestampDate(submitted.idempotencyExpiresAt) : undefined,
            };
          } else {
            const failure = failureOf(result.result.value);
            results[job.index] = { ok: false, error: DocketClientError.fromCall('SubmitJobs', failure, secrets), idempotencyKey: key };
            if (isRetryableFailure(failure)) retry.push(job);
          }
        });
        unsettled = retry;
        if (retry.length > 0) throw new ConnectError(`${retry.length} jobs were not decided`, Code.Unavailable);
      },
      clientRetry({ policy: deps.retry, rpc: 'SubmitJobs', signal, secrets }),
    );
  } catch (error) {
    throwIfAborted(signal, 'SubmitJobs');
    const failure = isDocketClientError(error) ? error : DocketClientError.fromCall('SubmitJobs', error, secrets);
    // Jobs the last try left undecided keep their own answer; jobs that never got one get the call's failure.
    for (const job of unsettled) results[job.index] ??= { ok: false, error: failure, idempotencyKey: job.request.idempotencyKey };
  }
}

/** The error SubmitJob would have thrown, from an item's `google.rpc.Status` (its details pass through). */
function failureOf(status: Status | undefined): ConnectError {
  if (!status) return new ConnectError('SubmitJobs answered an item without a result', Code.Internal);
  return failureOfStatus(status);
}

import { create, type JsonObject, type MessageInitShape } from '@bufbuild/protobuf';
import { durationFromMs, timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { Code, createClient as createConnectClient, type Client } from '@connectrpc/connect';
import { callWithRetry, type TryOptions } from '@docket/client-kit';
import { isTerminal, type JobStatusName } from '@docket/contracts';
import {
  AdmissionService,
  SignalReconcileAction,
  type BulkJobFilterSchema,
  type BulkOperation,
  type ExplainReason,
  type GetQueueStatsResponse,
  type Schedule,
  type Worker,
  SubmitJobRequestSchema,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ApprovalDecision } from '@docket/proto/docket/common/v1/approval_pb.js';
import type { Deletion } from '@docket/proto/docket/common/v1/deletion_pb.js';
import type { Event } from '@docket/proto/docket/common/v1/event_pb.js';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { Signal } from '@docket/proto/docket/common/v1/signal_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { DocketClientError } from './docket-client-error.js';
import { resolveIdempotencyKey } from './idempotency-key.js';
import { watchJobFeed, type JobFeedFrame, type WatchJobsOptions } from './job-feed.js';
import { watchJob, type JobWatchFrame, type WatchOptions } from './job-watch.js';
import type { DocketTransports, NodeTransportOptions } from './transports.js';
import { clientRetry, retryPolicyOf, throwIfAborted, type RetryPolicy } from './retry-policy.js';
import { submitMany, type BatchJob, type SubmitManyOptions, type SubmitManyResult } from './submit-many.js';
import { SubmitCoalescer } from './submit-coalescing.js';

/** Options of {@link createClient}: where the services are (or the transports to them), and how patient to be. */
export type ClientOptions = (
  | (NodeTransportOptions & { readonly transports?: undefined })
  | {
      /** Caller-built transports (connect-web in a browser, custom TLS, proxies); they must authenticate their calls themselves (see `bearerAuth`). */
      readonly transports: DocketTransports;
    }
) & {
  /** Retries of every unary call (defaults: {@link DEFAULT_RETRY_POLICY}). */
  readonly retry?: Partial<RetryPolicy>;
  /** Reconnections of streams: `tries` bounds consecutive reconnections without a frame (default 8 tries, 100 ms to 5 s). */
  readonly reconnect?: Partial<RetryPolicy>;
  /**
   * Whether concurrent {@link DocketClient.submit} calls share SubmitJobs
   * calls (default false): for a producer submitting many jobs at once,
   * each keeps SubmitJob's contract and errors, and costs a fraction of a
   * call of its own (see `SubmitCoalescer`).
   */
  readonly coalesceSubmissions?: boolean;
};

/** A job as a submission (SubmitJob's fields, without the key, which is an option). */
export type JobSpec = Omit<MessageInitShape<typeof SubmitJobRequestSchema>, 'idempotencyKey' | '$typeName'>;

/** Options of every mutation. */
export interface MutationOptions {
  /**
   * The idempotency key (16-128 of `[A-Za-z0-9._~-]`). Give one that you
   * store with your intent to make the effect idempotent across your own
   * restarts; omitted, the client draws a fresh one (returned in the
   * result) and reuses it for its own retries of this call.
   */
  readonly idempotencyKey?: string;
  /** Aborting stops the call and its retries with CANCELLED (the effect may or may not have happened: retry with the same key to find out). */
  readonly signal?: AbortSignal;
}

/** Options of the job transitions that may name the revision they expect. */
export interface TransitionOptions extends MutationOptions {
  /** Refuse (ABORTED, REVISION_MISMATCH) unless the job is at this revision. */
  readonly expectedRevision?: bigint | number;
}

/** What every mutation returns besides its subject. */
export interface MutationReceipt {
  /** True when the service replayed the stored response of an earlier identical request (on replay the subject is as it was then). */
  readonly replayed: boolean;
  /** The key the call was made with, to retry it later with the same effect. */
  readonly idempotencyKey: string;
  /** The binding of the key is kept at least until then. */
  readonly idempotencyExpiresAt: Date | undefined;
}

/** A mutation's answer about a job. */
export interface JobReceipt extends MutationReceipt {
  readonly job: Job;
}

/** SubmitJob's answer: the job, and whether it is an active job with the request's `unique_while_active` key instead of a new one. */
export interface SubmitReceipt extends JobReceipt {
  readonly deduplicated: boolean;
}

/** PauseSchedule's or ResumeSchedule's answer. */
export interface ScheduleReceipt extends MutationReceipt {
  readonly schedule: Schedule;
}

/** HardDeleteJob's answer. */
export interface DeletionReceipt extends MutationReceipt {
  readonly deletion: Deletion;
}

/** SendSignal's answer. */
export interface SignalReceipt extends MutationReceipt {
  readonly signal: Signal;
}

/** Options of {@link DocketClient.list}. */
export interface ListOptions {
  /** Only jobs in one of these statuses. */
  readonly statuses?: readonly JobStatus[];
  /** Only jobs of this queue. */
  readonly queue?: string;
  /** Include soft-deleted jobs. */
  readonly includeDeleted?: boolean;
  /** Only the children of this job (jobs submitted with it as a parent). */
  readonly parentJobId?: string;
  /** Jobs per page (0: the service's 50, at most 200). */
  readonly pageSize?: number;
  readonly signal?: AbortSignal;
}

/** One page of a listing. */
export interface JobPage {
  /** The jobs, newest first. */
  readonly jobs: readonly Job[];
  /** The token of the next page; empty on the last. */
  readonly nextPageToken: string;
  /** A WatchJobs cursor at this listing's consistency point. */
  readonly eventCursor: string;
}

/** One page of a job's journal ({@link DocketClient.readEvents}). */
export interface JournalPage {
  /** The events, in sequence order, contiguous after the requested sequence. */
  readonly events: readonly Event[];
  /** The sequence of the job's latest event when the page was read. */
  readonly latestSequence: bigint;
  /** The submission's request digest (64 lowercase hex), which every event hash covers. */
  readonly requestDigest: string;
}

/** Builds a client's transports from an address and a token, with a way to close them. */
export type TransportConnector = (options: NodeTransportOptions) => DocketTransports & { close(): void };

/** Options of the reads. */
export interface ReadOptions {
  readonly signal?: AbortSignal;
}

const DEFAULT_RECONNECT: Partial<RetryPolicy> = { tries: 8, initialDelayMs: 100, maxDelayMs: 5_000 };

/** A started bulk operation, and whether the start was a replay of its key. */
export type BulkOperationReceipt = MutationReceipt & { readonly operation: BulkOperation };

/** What ExplainJob answers: the job as the reasons saw it, and the reasons, most decisive first. */
export interface JobExplanation {
  readonly job: Job;
  readonly reasons: readonly ExplainReason[];
}

/**
 * A client of Docket's public API (admission and events). Every call is
 * retried only when it may have succeeded (see `isRetryableFailure`), and
 * every mutation is retried with the same idempotency key, so a retry
 * replays the first effect instead of making a second one. Every failure
 * is a {@link DocketClientError}.
 */
export class DocketClient {
  readonly #admission: Client<typeof AdmissionService>;
  readonly #events: Client<typeof EventService>;
  readonly #retry: RetryPolicy;
  readonly #reconnect: RetryPolicy;
  readonly #secrets: readonly string[];
  readonly #close: () => void;
  readonly #coalescer: SubmitCoalescer | undefined;

  /**
   * @param connect builds transports from a URL and a token where the
   *   platform can (Node: `createNodeTransports`); without it, `transports`
   *   must be given (browsers: connect-web)
   */
  constructor(options: ClientOptions, connect?: TransportConnector) {
    let transports: DocketTransports;
    if (options.transports) {
      transports = options.transports;
      this.#close = () => {};
      this.#secrets = [];
    } else {
      if (!connect) throw new TypeError('on this platform, pass `transports` (for example connect-web transports with bearerAuth)');
      const node = connect(options);
      transports = node;
      this.#close = () => node.close();
      this.#secrets = typeof options.token === 'string' ? [options.token] : [];
    }
    this.#admission = createConnectClient(AdmissionService, transports.admission);
    this.#events = createConnectClient(EventService, transports.events);
    this.#coalescer = options.coalesceSubmissions === true ? new SubmitCoalescer(this.#admission) : undefined;
    this.#retry = retryPolicyOf(options.retry);
    this.#reconnect = retryPolicyOf({ ...DEFAULT_RECONNECT, ...options.reconnect });
  }

  /** Closes the HTTP/2 sessions the client opened (nothing for caller-built transports). */
  close(): void {
    this.#close();
  }

  /**
   * Admits a job (SubmitJob). Without `idempotencyKey` a fresh key is drawn;
   * either way the same key is sent on every retry, so however many tries
   * it takes there is one job per key. Errors: INVALID_ARGUMENT
   * (INVALID_FIELD, LIMIT_EXCEEDED), ALREADY_EXISTS (IDEMPOTENCY_CONFLICT:
   * the key was used for another request).
   *
   * @example
   * const { job, replayed, idempotencyKey } = await client.submit({ queue: 'emails', input: { to: 'a@example.com' } });
   */
  async submit(spec: JobSpec, options: MutationOptions = {}): Promise<SubmitReceipt> {
    const key = resolveIdempotencyKey(options.idempotencyKey);
    const coalescer = this.#coalescer;
    const request = create(SubmitJobRequestSchema, { ...spec, idempotencyKey: key });
    const response = await this.#mutate('SubmitJob', key, options, (o) => (coalescer ? coalescer.submit(request, o) : this.#admission.submitJob(request, o)));
    return { job: required(response.job, 'SubmitJob', 'job'), ...receipt(response, key), deduplicated: response.deduplicated };
  }

  /**
   * Admits many jobs (SubmitJobs), each exactly as {@link submit} would:
   * calls of up to 1,000 jobs, one after another, so jobs are decided in
   * the order given; a job without `idempotencyKey` gets a fresh key. Every
   * job gets its own answer, in order: its receipt, or the error SubmitJob
   * would have thrown for it (a bad job fails alone). Jobs left undecided
   * by a retryable failure are sent again with their keys, so each is
   * admitted once. Throws only CANCELLED, when `options.signal` aborts.
   *
   * @example
   * const results = await client.submitMany(rows.map((row) => ({ queue: 'emails', input: row })));
   * const failed = results.filter((result) => !result.ok);
   */
  submitMany(jobs: readonly BatchJob[], options: SubmitManyOptions = {}): Promise<SubmitManyResult[]> {
    return submitMany({ admission: this.#admission, retry: this.#retry, secrets: this.#secrets }, jobs, options);
  }

  /** Cancels a job (CancelJob): at once unless RUNNING, which goes CANCELLING until its worker reports. */
  cancel(jobId: string, options: TransitionOptions = {}): Promise<JobReceipt> {
    return this.#transition('CancelJob', jobId, options, (request, o) => this.#admission.cancelJob(request, o));
  }

  /** Pauses a job (PauseJob). */
  pause(jobId: string, options: TransitionOptions = {}): Promise<JobReceipt> {
    return this.#transition('PauseJob', jobId, options, (request, o) => this.#admission.pauseJob(request, o));
  }

  /** Resumes a paused job (ResumeJob). */
  resume(jobId: string, options: TransitionOptions = {}): Promise<JobReceipt> {
    return this.#transition('ResumeJob', jobId, options, (request, o) => this.#admission.resumeJob(request, o));
  }

  /** Hides a terminal job from listings (SoftDeleteJob). */
  softDelete(jobId: string, options: TransitionOptions = {}): Promise<JobReceipt> {
    return this.#transition('SoftDeleteJob', jobId, options, (request, o) => this.#admission.softDeleteJob(request, o));
  }

  /** Brings a soft-deleted job back (RestoreJob). */
  restore(jobId: string, options: TransitionOptions = {}): Promise<JobReceipt> {
    return this.#transition('RestoreJob', jobId, options, (request, o) => this.#admission.restoreJob(request, o));
  }

  /** Re-queues a FAILED, CANCELLED or INTERRUPTED job with a fresh attempt budget (RetryJob). */
  async retry(jobId: string, options: MutationOptions = {}): Promise<JobReceipt> {
    return this.#keyed('RetryJob', 'job', options, (idempotencyKey) => ({ idempotencyKey, jobId }), (request, o) => this.#admission.retryJob(request, o));
  }

  /** Tombstones a terminal job and starts its durable erasure (HardDeleteJob); follow it with {@link getDeletion}. */
  async hardDelete(jobId: string, options: MutationOptions = {}): Promise<DeletionReceipt> {
    return this.#keyed('HardDeleteJob', 'deletion', options, (idempotencyKey) => ({ idempotencyKey, jobId }), (request, o) => this.#admission.hardDeleteJob(request, o));
  }

  /** Allows or denies a job's pending approval (DecideApproval). Errors include ALREADY_EXISTS (APPROVAL_SPENT). */
  async decideApproval(
    jobId: string,
    approvalId: string,
    decision: 'ALLOW' | 'DENY',
    options: MutationOptions & { readonly comment?: string } = {},
  ): Promise<JobReceipt> {
    return this.#keyed(
      'DecideApproval',
      'job',
      options,
      (idempotencyKey) => ({
        idempotencyKey,
        jobId,
        approvalId,
        decision: decision === 'ALLOW' ? ApprovalDecision.ALLOW : ApprovalDecision.DENY,
        comment: options.comment ?? '',
      }),
      (request, o) => this.#admission.decideApproval(request, o),
    );
  }

  /** Sends a named input to a job's inbox (SendSignal). Errors include FAILED_PRECONDITION (SIGNALS_UNRESOLVED). */
  async sendSignal(
    jobId: string,
    name: string,
    payload: JsonObject = {},
    options: MutationOptions = {},
  ): Promise<SignalReceipt> {
    return this.#keyed('SendSignal', 'signal', options, (idempotencyKey) => ({ idempotencyKey, jobId, name, payload }), (request, o) => this.#admission.sendSignal(request, o));
  }

  /** Resolves signals left UNKNOWN by a lost attempt (ReconcileSignals). */
  async reconcileSignals(jobId: string, action: 'REDELIVER' | 'DISCARD', options: MutationOptions = {}): Promise<JobReceipt> {
    return this.#keyed(
      'ReconcileSignals',
      'job',
      options,
      (idempotencyKey) => ({ idempotencyKey, jobId, action: action === 'REDELIVER' ? SignalReconcileAction.REDELIVER : SignalReconcileAction.DISCARD }),
      (request, o) => this.#admission.reconcileSignals(request, o),
    );
  }

  /** A job's current projection (GetJob). Errors: NOT_FOUND (also for another subject's job). */
  async get(jobId: string, options: ReadOptions = {}): Promise<Job> {
    const response = await this.#read('GetJob', options, (o) => this.#admission.getJob({ jobId }, o));
    return required(response.job, 'GetJob', 'job');
  }

  /**
   * Why a job is or is not running now (ExplainJob): the job and its
   * reasons, most decisive first, each an `ExplainCode` with a message and
   * details that name the numbers. Errors: NOT_FOUND (also for another
   * subject's job).
   */
  async explain(jobId: string, options: ReadOptions = {}): Promise<JobExplanation> {
    const response = await this.#read('ExplainJob', options, (o) => this.#admission.explainJob({ jobId }, o));
    return { job: required(response.job, 'ExplainJob', 'job'), reasons: response.reasons };
  }

  /** A deletion operation (GetDeletion). */
  async getDeletion(deletionId: string, options: ReadOptions = {}): Promise<Deletion> {
    const response = await this.#read('GetDeletion', options, (o) => this.#admission.getDeletion({ deletionId }, o));
    return required(response.deletion, 'GetDeletion', 'deletion');
  }

  /**
   * One page of a job's journal as the events service returns it
   * (ReadJobEvents): events with a sequence above `afterSequence`, at most
   * `pageSize` (0: the service's 100, at most 256), with the latest
   * sequence and the submission's request digest, from which a reader can
   * recompute every hash itself (the console does, with SubtleCrypto). The
   * service verified the page before answering; a damaged journal is
   * DATA_LOSS / `JOURNAL_CORRUPT` with metadata `sequence`.
   */
  async readEvents(
    jobId: string,
    options: ReadOptions & { readonly afterSequence?: bigint | number; readonly pageSize?: number } = {},
  ): Promise<JournalPage> {
    const request = { jobId, afterSequence: BigInt(options.afterSequence ?? 0), pageSize: options.pageSize ?? 0 };
    const page = await this.#read('ReadJobEvents', options, (o) => this.#events.readJobEvents(request, o));
    return { events: page.events, latestSequence: page.latestSequence, requestDigest: page.requestDigest };
  }

  /** Every schedule of the caller (every schedule, for an admin), newest first, page after page (ListSchedules). */
  async *listSchedules(options: ReadOptions & { readonly pageSize?: number } = {}): AsyncGenerator<Schedule, void, undefined> {
    let pageToken = '';
    do {
      const page = await this.#read('ListSchedules', options, (o) => this.#admission.listSchedules({ pageSize: options.pageSize ?? 0, pageToken }, o));
      yield* page.schedules;
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
  }

  /**
   * A queue's statistics (GetQueueStats, admin tokens only): jobs by
   * status, the oldest queued job's age, and per bucket of `bucketMs`
   * (default a minute) over `windowMs` (default an hour) the jobs admitted,
   * claimed, succeeded and failed with pickup latency p50 and p99.
   */
  async getQueueStats(queue: string, options: ReadOptions & { readonly windowMs?: number; readonly bucketMs?: number } = {}): Promise<GetQueueStatsResponse> {
    const request = {
      queue,
      ...(options.windowMs === undefined ? {} : { window: durationFromMs(options.windowMs) }),
      ...(options.bucketMs === undefined ? {} : { bucket: durationFromMs(options.bucketMs) }),
    };
    return this.#read('GetQueueStats', options, (o) => this.#admission.getQueueStats(request, o));
  }

  /** Every worker registration (ListWorkers, admin tokens only), newest first, page after page; `queue` keeps those that serve it. */
  async *listWorkers(options: ReadOptions & { readonly queue?: string; readonly pageSize?: number } = {}): AsyncGenerator<Worker, void, undefined> {
    let pageToken = '';
    do {
      const page = await this.#read('ListWorkers', options, (o) =>
        this.#admission.listWorkers({ queue: options.queue ?? '', pageSize: options.pageSize ?? 0, pageToken }, o),
      );
      yield* page.workers;
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
  }

  /**
   * Starts a durable bulk RetryJob (RetryJobs, admin tokens only) of every
   * job `filter` matches; follow it with {@link getBulkOperation}.
   */
  async retryJobs(filter: MessageInitShape<typeof BulkJobFilterSchema>, options: MutationOptions = {}): Promise<BulkOperationReceipt> {
    return this.#keyed('RetryJobs', 'operation', options, (idempotencyKey) => ({ idempotencyKey, filter }), (request, o) => this.#admission.retryJobs(request, o));
  }

  /** Starts a durable bulk CancelJob (CancelJobs, admin tokens only) of every job `filter` matches. */
  async cancelJobs(filter: MessageInitShape<typeof BulkJobFilterSchema>, options: MutationOptions = {}): Promise<BulkOperationReceipt> {
    return this.#keyed('CancelJobs', 'operation', options, (idempotencyKey) => ({ idempotencyKey, filter }), (request, o) => this.#admission.cancelJobs(request, o));
  }

  /** A bulk operation's progress (GetBulkOperation, admin tokens only). */
  async getBulkOperation(operationId: string, options: ReadOptions = {}): Promise<BulkOperation> {
    const response = await this.#read('GetBulkOperation', options, (o) => this.#admission.getBulkOperation({ operationId }, o));
    return required(response.operation, 'GetBulkOperation', 'operation');
  }

  /** Stops a schedule firing (PauseSchedule); idempotent by its key like every mutation. */
  async pauseSchedule(scheduleId: string, options: MutationOptions = {}): Promise<ScheduleReceipt> {
    return this.#keyed('PauseSchedule', 'schedule', options, (idempotencyKey) => ({ idempotencyKey, scheduleId }), (request, o) => this.#admission.pauseSchedule(request, o));
  }

  /** Lets a paused schedule fire again from its next tick (ResumeSchedule). */
  async resumeSchedule(scheduleId: string, options: MutationOptions = {}): Promise<ScheduleReceipt> {
    return this.#keyed('ResumeSchedule', 'schedule', options, (idempotencyKey) => ({ idempotencyKey, scheduleId }), (request, o) => this.#admission.resumeSchedule(request, o));
  }

  /**
   * Every job the filter selects, newest first, fetching page after page
   * (ListJobs with the previous `next_page_token`) as the iteration
   * proceeds. The first page fixes a snapshot: jobs admitted later are not
   * listed. Each page is retried like any read; an expired page token
   * fails INVALID_ARGUMENT (CURSOR_EXPIRED).
   *
   * @example
   * for await (const job of client.list({ queue: 'emails', statuses: [JobStatus.FAILED] })) console.log(job.id);
   */
  async *list(options: ListOptions = {}): AsyncGenerator<Job, void, undefined> {
    let pageToken = '';
    do {
      const page = await this.listPage({ ...options, pageToken });
      yield* page.jobs;
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
  }

  /**
   * One page of ListJobs, for callers that keep the page token themselves
   * or need the listing's `eventCursor` (a WatchJobs cursor at the
   * snapshot's consistency point: start {@link watchJobs} there to miss
   * no change after the listing). Pass the previous page's
   * `nextPageToken` with the same filter; empty means the last page.
   */
  async listPage(options: ListOptions & { readonly pageToken?: string } = {}): Promise<JobPage> {
    const filter = {
      statuses: [...(options.statuses ?? [])],
      queue: options.queue ?? '',
      includeDeleted: options.includeDeleted ?? false,
      parentJobId: options.parentJobId ?? '',
    };
    const request = { pageSize: options.pageSize ?? 0, pageToken: options.pageToken ?? '', filter };
    const page = await this.#read('ListJobs', options, (o) => this.#admission.listJobs(request, o));
    return { jobs: page.jobs, nextPageToken: page.nextPageToken, eventCursor: page.eventCursor };
  }

  /**
   * A job's journal events and live progress frames, in order, from
   * `afterSequence + 1`, until the job is terminal and its last event was
   * delivered (the server's `end`). Each event is verified before it is
   * yielded: it continues the sequence and the hash chain and its hash
   * recomputes from the submission's request digest (ReadJobEvents'
   * `request_digest`); a break throws DATA_LOSS / `JOURNAL_CORRUPT` with
   * metadata `detected_by: client`, and a server that refuses the journal
   * throws the same code and reason without it. A stream that fails in a
   * transient way or closes without `end` is reopened after the last
   * sequence received: no gap, no duplicate. Progress frames are live only
   * and not replayed after a reconnect.
   *
   * @example
   * for await (const frame of client.watch(job.id)) if (frame.kind === 'event') console.log(frame.event.sequence, frame.event.type);
   */
  watch(jobId: string, options: WatchOptions = {}): AsyncGenerator<JobWatchFrame, void, undefined> {
    return watchJob({ events: this.#events, retry: this.#retry, reconnect: this.#reconnect, secrets: this.#secrets }, jobId, options);
  }

  /**
   * The global change feed (WatchJobs): `job_changed` invalidations in
   * commit order, `resync_required` when the feed cannot continue from
   * the cursor (re-read your snapshot and keep consuming). After a
   * disconnect the feed is reopened from the latest cursor received.
   */
  watchJobs(options: WatchJobsOptions = {}): AsyncGenerator<JobFeedFrame, void, undefined> {
    return watchJobFeed({ events: this.#events, reconnect: this.#reconnect, secrets: this.#secrets }, options);
  }

  /**
   * Waits until the job is terminal (SUCCEEDED, FAILED, CANCELLED or
   * INTERRUPTED) and returns it as then read with GetJob. Waits on the
   * job's event stream (verified like {@link watch}) from its latest
   * sequence, so it needs no polling interval. Aborting `signal` throws
   * CANCELLED; the job is not affected.
   */
  async result(jobId: string, options: ReadOptions = {}): Promise<Job> {
    for (;;) {
      const job = await this.get(jobId, options);
      if (isTerminalStatus(job.status)) return job;
      for await (const frame of this.watch(jobId, { afterSequence: job.latestSequence, ...options })) void frame;
      throwIfAborted(options.signal, 'result');
    }
  }

  #transition(
    rpc: string,
    jobId: string,
    options: TransitionOptions,
    send: (
      request: { idempotencyKey: string; jobId: string; expectedRevision?: bigint },
      callOptions: TryOptions,
    ) => Promise<{ job?: Job | undefined; replayed: boolean; idempotencyExpiresAt?: Timestamp | undefined }>,
  ): Promise<JobReceipt> {
    return this.#keyed(
      rpc,
      'job',
      options,
      (idempotencyKey) => ({
        idempotencyKey,
        jobId,
        ...(options.expectedRevision === undefined ? {} : { expectedRevision: BigInt(options.expectedRevision) }),
      }),
      send,
    );
  }

  /**
   * A mutation under its idempotency key: the caller's, or a fresh one,
   * which `request` builds into the request once and every retry sends
   * again. The answer must carry `field`; the receipt says whether it was
   * a replay and until when the key is bound.
   */
  #keyed<Q, F extends string, R extends MutationResponse & { readonly [K in F]?: unknown }>(
    rpc: string,
    field: F,
    options: MutationOptions,
    request: (idempotencyKey: string) => Q,
    send: (request: Q, callOptions: TryOptions) => Promise<R>,
  ): Promise<MutationReceipt & { readonly [K in F]: NonNullable<R[K]> }> {
    const key = resolveIdempotencyKey(options.idempotencyKey);
    const built = request(key);
    return this.#mutate(rpc, key, options, (o) => send(built, o)).then(
      (response) => ({ [field]: required(response[field], rpc, field), ...receipt(response, key) }) as MutationReceipt & { readonly [K in F]: NonNullable<R[K]> },
    );
  }

  #mutate<T>(rpc: string, key: string, options: MutationOptions, call: (o: TryOptions) => Promise<T>): Promise<T> {
    return callWithRetry(call, clientRetry({ policy: this.#retry, rpc, signal: options.signal, secrets: [...this.#secrets, key] }));
  }

  #read<T>(rpc: string, options: ReadOptions, call: (o: TryOptions) => Promise<T>): Promise<T> {
    return callWithRetry(call, clientRetry({ policy: this.#retry, rpc, signal: options.signal, secrets: this.#secrets }));
  }
}

/** Whether a job status never changes again. */
export function isTerminalStatus(status: JobStatus): boolean {
  const name = JobStatus[status] as JobStatusName | undefined;
  return name !== undefined && isTerminal(name);
}

/** What every mutation's answer says of its idempotency key. */
type MutationResponse = { readonly replayed: boolean; readonly idempotencyExpiresAt?: Timestamp | undefined };

function receipt(response: MutationResponse, key: string): MutationReceipt {
  return {
    replayed: response.replayed,
    idempotencyKey: key,
    idempotencyExpiresAt: response.idempotencyExpiresAt ? timestampDate(response.idempotencyExpiresAt) : undefined,
  };
}

function required<T>(value: T | undefined, rpc: string, field: string): T {
  if (value === undefined) throw new DocketClientError(Code.Internal, undefined, `${rpc} failed: the response has no ${field}`);
  return value;
}

import type { Transport } from '@connectrpc/connect';
import { isValidQueueName } from '@docket/contracts';
import { DocketWorkerError } from './docket-worker-error.js';
import type { TokenSource } from './execution-client.js';
import type { JobHandler } from './job-context.js';
import type { DescribeError } from './outcome-plan.js';
import type { WorkerLogger } from './worker-logger.js';

/** Where the execution service listens by default (`docket dev`). */
export const DEFAULT_EXECUTION_URL = 'http://127.0.0.1:7402';

/** Options of `createWorker`. */
export interface WorkerOptions {
  /** The execution service; default {@link DEFAULT_EXECUTION_URL}. */
  readonly url?: string;
  /** A bearer JWT with role `worker`, or a function returning the current one. Required unless `transport` is given. */
  readonly token?: TokenSource;
  /** A ready transport to use instead of connecting to `url` (it must authenticate by itself). */
  readonly transport?: Transport;
  /**
   * The worker's stable name, 1 to 128 characters of `[A-Za-z0-9._:-]`.
   * Registering a name supersedes its earlier incarnations and settles
   * their attempts at once, so a restarted worker should keep its name and
   * two live workers must not share one.
   */
  readonly name: string;
  /** Queues to claim from, 1 to 32 distinct names. */
  readonly queues: readonly string[];
  /**
   * Most handlers running at once, 1 to 1000; also the most outcome
   * reports in flight. A handler's slot frees as soon as its outcome report
   * is sent, so the next claim and the next job never wait for
   * ReportOutcome's answer.
   */
  readonly concurrency: number;
  /**
   * Most jobs one ClaimJobs call asks for, 1 to 100; default `concurrency`
   * plus `prefetch` (at most 100). Each claim asks for every free handler
   * slot and free prefetch place, up to this; one claim can return several
   * jobs, which start together.
   */
  readonly claimBatchSize?: number;
  /**
   * How many claimed jobs the worker may hold before a handler slot is
   * free for them, 0 to 1000; default 0 (off). A freed slot then starts the
   * next job at once, without a claim round trip. The trade-off: a
   * prefetched job's lease runs from its claim, so the SDK renews it while
   * it waits (as for a running job), the job is held away from other
   * workers meanwhile, and it counts against its queue's concurrency limit
   * and its attempt timeout from the claim. The execution service has no
   * call that hands a claimed job back: on drain, prefetched jobs still
   * start as slots free within the grace period; those that never start
   * (after `stop()`, after the grace period, or when the worker is
   * superseded) are settled as lost when their lease expires, which costs
   * the job an attempt. A prefetched job that is cancelled or paused before
   * it starts is reported cancelled or paused at once.
   */
  readonly prefetch?: number;
  /** Runs each claimed job. */
  readonly handler: JobHandler;
  /** Renew each lease after this fraction of its duration; default 1/3, between 0.05 and 0.9. */
  readonly leaseRenewFraction?: number;
  /** How long one ClaimJobs long-poll waits for work, in ms; default 20 000, 0 to 60 000. */
  readonly claimWaitMs?: number;
  /** How long `drain()` (and SIGTERM) lets running handlers finish before asking them to stop; default 30 000 ms. */
  readonly drainGraceMs?: number;
  /** Deadline of each try of each unary call other than ClaimJobs; default 10 000 ms. */
  readonly callTimeoutMs?: number;
  /**
   * While a handler waits on `job.signals`, renew its lease this often (in
   * ms) instead of at the lease timer's pace, so new signals arrive sooner;
   * default 1 000, 10 to 60 000. RenewAttempt is cheap; it also extends the
   * lease.
   */
  readonly signalPollMs?: number;
  /** Drain on the first SIGTERM or SIGINT, stop at once on the second; default false. */
  readonly handleSignals?: boolean;
  /**
   * Carry claims and attempt calls on one ExecutionService/Work stream, the
   * worker session (default true); false makes each of them a unary RPC, as
   * for a proxy that cannot carry a bidirectional stream. Against a service
   * without Work the SDK goes unary by itself.
   */
  readonly workSession?: boolean;
  /** Where the SDK logs; default silent. */
  readonly logger?: WorkerLogger;
  /**
   * Opt-in for showing a handler error to the job's owner: return a
   * `JobFailure` for errors whose text is safe, `undefined` for the generic
   * INTERNAL failure.
   */
  readonly describeError?: DescribeError;
}

/** {@link WorkerOptions} checked, with every default applied. */
export interface ResolvedWorkerOptions {
  readonly url: string;
  readonly token: TokenSource | undefined;
  readonly transport: Transport | undefined;
  readonly name: string;
  readonly queues: readonly string[];
  readonly concurrency: number;
  readonly claimBatchSize: number;
  readonly prefetch: number;
  readonly handler: JobHandler;
  readonly leaseRenewFraction: number;
  readonly claimWaitMs: number;
  readonly drainGraceMs: number;
  readonly callTimeoutMs: number;
  readonly signalPollMs: number;
  readonly handleSignals: boolean;
  readonly workSession: boolean;
  readonly logger: WorkerLogger | undefined;
  readonly describeError: DescribeError | undefined;
}

const WORKER_NAME = /^[A-Za-z0-9._:-]{1,128}$/;

/** The most assignments one ClaimJobs call returns (proto contract). */
const MAX_CLAIM_BATCH = 100;

/**
 * Checks `options` and applies the defaults; throws a `DocketWorkerError`
 * (INVALID_OPTION) naming the first wrong option, before anything connects.
 */
export function resolveWorkerOptions(options: WorkerOptions): ResolvedWorkerOptions {
  const bad = (what: string): never => {
    throw DocketWorkerError.local('INVALID_OPTION', what);
  };
  const url = options.url ?? DEFAULT_EXECUTION_URL;
  if (!options.transport) {
    if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) bad('url must be an http:// or https:// URL');
    if (options.token === undefined || options.token === '') bad('token is required (a bearer JWT with role worker)');
  }
  if (typeof options.name !== 'string' || !WORKER_NAME.test(options.name)) bad('name must be 1 to 128 characters of [A-Za-z0-9._:-]');
  const queues = [...(options.queues ?? [])];
  if (queues.length < 1 || queues.length > 32) bad('queues must name 1 to 32 queues');
  if (new Set(queues).size !== queues.length) bad('queues must be distinct');
  for (const queue of queues) if (!isValidQueueName(queue)) bad(`queue names must be valid queue names`);
  if (!Number.isInteger(options.concurrency) || options.concurrency < 1 || options.concurrency > 1000) bad('concurrency must be an integer from 1 to 1000');
  const prefetch = options.prefetch ?? 0;
  if (!Number.isInteger(prefetch) || prefetch < 0 || prefetch > 1000) bad('prefetch must be an integer from 0 to 1000');
  const claimBatchSize = options.claimBatchSize ?? Math.min(options.concurrency + prefetch, MAX_CLAIM_BATCH);
  if (!Number.isInteger(claimBatchSize) || claimBatchSize < 1 || claimBatchSize > MAX_CLAIM_BATCH) bad(`claimBatchSize must be an integer from 1 to ${MAX_CLAIM_BATCH}`);
  if (typeof options.handler !== 'function') bad('handler must be a function');
  const fraction = options.leaseRenewFraction ?? 1 / 3;
  if (!(fraction >= 0.05 && fraction <= 0.9)) bad('leaseRenewFraction must be between 0.05 and 0.9');
  const claimWaitMs = options.claimWaitMs ?? 20_000;
  if (!Number.isInteger(claimWaitMs) || claimWaitMs < 0 || claimWaitMs > 60_000) bad('claimWaitMs must be an integer from 0 to 60000');
  const drainGraceMs = options.drainGraceMs ?? 30_000;
  if (!(drainGraceMs >= 0) || !Number.isFinite(drainGraceMs)) bad('drainGraceMs must be a non-negative number');
  const callTimeoutMs = options.callTimeoutMs ?? 10_000;
  if (!(callTimeoutMs >= 100) || !Number.isFinite(callTimeoutMs)) bad('callTimeoutMs must be at least 100');
  const signalPollMs = options.signalPollMs ?? 1_000;
  if (!Number.isInteger(signalPollMs) || signalPollMs < 10 || signalPollMs > 60_000) bad('signalPollMs must be an integer from 10 to 60000');
  return {
    url,
    token: options.token,
    transport: options.transport,
    name: options.name,
    queues,
    concurrency: options.concurrency,
    claimBatchSize,
    prefetch,
    handler: options.handler,
    leaseRenewFraction: fraction,
    claimWaitMs,
    drainGraceMs,
    callTimeoutMs,
    signalPollMs,
    handleSignals: options.handleSignals ?? false,
    workSession: options.workSession ?? true,
    logger: options.logger,
    describeError: options.describeError,
  };
}

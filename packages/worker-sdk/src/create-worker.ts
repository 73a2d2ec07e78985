import { setMaxListeners } from 'node:events';
import { durationFromMs, durationMs } from '@bufbuild/protobuf/wkt';
import { callWithRetry, type RetrySchedule } from '@docket/client-kit';
import { delay, newId } from '@docket/contracts';
import type { Assignment, ClaimJobsRequestSchema } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { AbortKind } from './abort-reason.js';
import { AttemptPipeline, type AttemptCounts } from './attempt-pipeline.js';
import { AttemptRun, type AttemptEnvironment } from './attempt-run.js';
import { linkedSignal } from './linked-signal.js';
import { DocketWorkerError } from './docket-worker-error.js';
import { connectExecution, type ExecutionConnection } from './execution-client.js';
import { resolveWorkerOptions, type ResolvedWorkerOptions, type WorkerOptions } from './worker-options.js';
import { silentLogger, type WorkerLogger } from './worker-logger.js';
import { emptyWorkerStats, type WorkerStats } from './worker-stats.js';

/** Where a worker is in its life. */
export type WorkerState = 'idle' | 'starting' | 'running' | 'draining' | 'stopped';

/** How a worker ended: what `worker.done` resolves with. */
export interface WorkerExit {
  /**
   * `drained`: every handler finished within the grace period;
   * `stopped`: `stop()`, or handlers still running when the grace period
   * ended were asked to shut down; `superseded`: a later registration of
   * the same name took over (STALE_INCARNATION); `failed`: registration or
   * claiming was refused (see `error`).
   */
  readonly reason: 'drained' | 'stopped' | 'superseded' | 'failed';
  /** What stopped the worker, for `superseded` and `failed`. */
  readonly error?: DocketWorkerError;
  /** Attempts still held (a handler running, or an outcome report unanswered) when the worker gave up on them (they settle as lost). */
  readonly abandoned: number;
}

/** A running Docket worker; its counters say how many attempts it holds, by where each is. */
export interface Worker extends AttemptCounts {
  /**
   * Registers the worker (a new incarnation of its name) and starts the
   * claim loop; resolves once registered. Rejects with a
   * `DocketWorkerError` when registration is refused or the service stays
   * unreachable. Call it once.
   */
  start(): Promise<void>;
  /**
   * Stops claiming (an in-flight long-poll is cut and reconciled by
   * replaying its operation id), lets running handlers finish and prefetched
   * jobs start and finish for up to `graceMs` (default the `drainGraceMs`
   * option), then asks the rest to stop with a `shutdown` abort (prefetched
   * jobs that never started are left to lease expiry) and waits a few
   * seconds more. Outcome reports in flight are answered before it
   * resolves. Resolves when the worker has stopped. Idempotent.
   */
  drain(options?: { readonly graceMs?: number }): Promise<void>;
  /** Like `drain` with no grace period: running handlers are asked to stop at once, prefetched jobs never start, reports in flight are still answered. */
  stop(): Promise<void>;
  readonly state: WorkerState;
  /** The incarnation id once registered. */
  readonly incarnation: string | undefined;
  /** The registration's generation once registered. */
  readonly generation: bigint | undefined;
  /** The lease duration the service granted, in ms, once registered. */
  readonly leaseMs: number | undefined;
  /** Live counters (see {@link WorkerStats}). */
  readonly stats: Readonly<WorkerStats>;
  /** Resolves (never rejects) when the worker has stopped, saying why. */
  readonly done: Promise<WorkerExit>;
}

/** Registration retries: the call is safe to repeat (a retry supersedes its lost first try). */
const REGISTER_RETRIES: RetrySchedule = { tries: 6, initialDelayMs: 250, maxDelayMs: 2_000 };

/** Claim retries: forever while running, with the same operation id, so an execution restart costs no claim. */
const CLAIM_RETRIES: RetrySchedule = { tries: Infinity, initialDelayMs: 200, maxDelayMs: 5_000 };

/** How long the replay of an interrupted claim may take (the service answers before this deadline). */
const RECONCILE_TIMEOUT_MS = 1_000;

/** After asking handlers to shut down (or after losing the incarnation), how long to wait for them. */
const SHUTDOWN_WAIT_MS = 5_000;

/** An empty claim faster than this is followed by a short pause, so a service that does not long-poll is not hammered. */
const EMPTY_CLAIM_FLOOR_MS = 100;

/**
 * Creates a worker for Docket's execution service. Nothing connects until
 * `start()`. Options are checked at once (a `DocketWorkerError`,
 * INVALID_OPTION, names the first wrong one).
 *
 * @example
 * const worker = createWorker({
 *   url: 'http://127.0.0.1:7402', token, name: 'thumbnailer-1', queues: ['images'], concurrency: 8,
 *   handleSignals: true,
 *   async handler(job) {
 *     const done = job.checkpoint?.['done'] ?? 0;
 *     ...
 *     return { thumbnails: 12 };
 *   },
 * });
 * await worker.start();
 * await worker.done;
 */
export function createWorker(options: WorkerOptions): Worker {
  return new DocketWorker(resolveWorkerOptions(options));
}

class DocketWorker implements Worker {
  private readonly options: ResolvedWorkerOptions;
  private readonly logger: WorkerLogger;
  private readonly pipeline: AttemptPipeline;
  private readonly claimStop = new AbortController();
  private readonly graceStop = new AbortController();
  private readonly closed = new AbortController();
  private connection: ExecutionConnection | undefined;
  private currentState: WorkerState = 'idle';
  private starting: Promise<void> | undefined;
  private loop: Promise<void> = Promise.resolve();
  private ending: Promise<void> | undefined;
  private registered: { incarnation: string; generation: bigint; leaseMs: number } | undefined;
  private resolveDone!: (exit: WorkerExit) => void;
  private removeSignalHandlers: (() => void) | undefined;
  readonly stats: WorkerStats = emptyWorkerStats();
  readonly done: Promise<WorkerExit>;

  constructor(options: ResolvedWorkerOptions) {
    this.options = options;
    this.logger = options.logger ?? silentLogger;
    // Every attempt whose call is backing off waits on `closed` (one listener each, removed when
    // the wait ends), so a worker with more than ten retrying attempts is no listener leak.
    setMaxListeners(0, this.closed.signal);
    this.pipeline = new AttemptPipeline(options, this.stats, this.logger, this.closed.signal);
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  get running(): number {
    return this.pipeline.size;
  }

  get handlersRunning(): number {
    return this.pipeline.counts.handlersRunning;
  }

  get reportsInFlight(): number {
    return this.pipeline.counts.reportsInFlight;
  }

  get prefetched(): number {
    return this.pipeline.counts.prefetched;
  }

  get state(): WorkerState {
    return this.currentState;
  }

  /** The state, read through a call so TypeScript keeps no narrowing across awaits. */
  private stateNow(): WorkerState {
    return this.currentState;
  }

  get incarnation(): string | undefined {
    return this.registered?.incarnation;
  }

  get generation(): bigint | undefined {
    return this.registered?.generation;
  }

  get leaseMs(): number | undefined {
    return this.registered?.leaseMs;
  }

  start(): Promise<void> {
    if (this.currentState !== 'idle') {
      return Promise.reject(DocketWorkerError.local('WORKER_STATE', `start() on a worker that is ${this.currentState}`));
    }
    this.currentState = 'starting';
    if (this.options.handleSignals) this.installSignalHandlers();
    this.starting = this.register();
    return this.starting;
  }

  drain(options: { readonly graceMs?: number } = {}): Promise<void> {
    return this.end('drained', options.graceMs ?? this.options.drainGraceMs, undefined);
  }

  stop(): Promise<void> {
    this.graceStop.abort();
    return this.end('stopped', 0, undefined);
  }

  private async register(): Promise<void> {
    const { name, queues, concurrency, prefetch, callTimeoutMs } = this.options;
    try {
      this.connection = connectExecution(this.options.url, this.options.token, { transport: this.options.transport, session: this.options.workSession });
      const client = this.connection.client;
      const response = await callWithRetry(
        () => client.registerWorker({ workerName: name, queues: [...queues], maxConcurrency: this.pipeline.capacity }, { timeoutMs: callTimeoutMs }),
        {
          schedule: REGISTER_RETRIES,
          scope: 'possibly-applied',
          signal: this.claimStop.signal,
          onRetry: (error, tryNumber) =>
            this.logger.warn(`RegisterWorker try ${tryNumber} failed (${DocketWorkerError.fromCall('RegisterWorker', error).code}); retrying`, {
              event: 'call.retry', rpc: 'RegisterWorker',
            }),
        },
      );
      const leaseMs = response.leaseDuration ? durationMs(response.leaseDuration) : 0;
      if (!(leaseMs > 0)) throw new DocketWorkerError(13, undefined, 'RegisterWorker returned no lease duration');
      this.registered = { incarnation: response.workerIncarnation, generation: response.generation, leaseMs };
    } catch (error) {
      const failure = DocketWorkerError.fromCall('RegisterWorker', error);
      this.logger.error(`registration failed (${failure.reason ?? failure.code})`, { event: 'worker.failed', code: failure.code, reason: failure.reason });
      this.currentState = 'stopped';
      this.finish('failed', failure);
      throw failure;
    }
    if (this.claimStop.signal.aborted) return; // drained or stopped while registering: end() finishes
    this.currentState = 'running';
    this.logger.info(
      `registered ${name} (incarnation ${this.registered.incarnation}, generation ${this.registered.generation}, lease ${this.registered.leaseMs} ms) on ${queues.join(', ')} with concurrency ${concurrency}${prefetch > 0 ? `, prefetch ${prefetch}` : ''}`,
      { event: 'worker.registered', incarnation: this.registered.incarnation, generation: this.registered.generation, leaseMs: this.registered.leaseMs },
    );
    this.loop = this.claimLoop();
  }

  /**
   * Claims while running, one ClaimJobs at a time: max_jobs is the room in
   * the pipeline (free handler slots plus free prefetch places, up to
   * `claimBatchSize`), so handlers never exceed `concurrency`. Outcome
   * reports in flight take no room: the next claim never waits for them.
   */
  private async claimLoop(): Promise<void> {
    const client = this.connection!.client;
    const { claimWaitMs, callTimeoutMs, claimBatchSize, queues } = this.options;
    while (this.state === 'running') {
      await this.pipeline.whenRoom(this.claimStop.signal);
      if (this.state !== 'running') break;
      const request: MessageInitShape<typeof ClaimJobsRequestSchema> = {
        workerIncarnation: this.registered!.incarnation,
        queues: [...queues],
        maxJobs: Math.min(claimBatchSize, this.pipeline.room),
        wait: durationFromMs(claimWaitMs),
        operationId: newId('op'),
      };
      const sentAt = Date.now();
      let assignments: Assignment[];
      try {
        const response = await callWithRetry(
          () => {
            const linked = linkedSignal(this.claimStop.signal);
            return client.claimJobs(request, { timeoutMs: claimWaitMs + callTimeoutMs, signal: linked.signal }).finally(linked.dispose);
          },
          {
            schedule: CLAIM_RETRIES,
            scope: 'possibly-applied',
            signal: this.claimStop.signal,
            onRetry: (error, tryNumber, backoffMs) => {
              const failure = DocketWorkerError.fromCall('ClaimJobs', error);
              this.logger.warn(`ClaimJobs try ${tryNumber} failed (${failure.reason ?? failure.code}); retrying with the same operation id`, {
                event: 'call.retry', rpc: 'ClaimJobs', code: failure.code, reason: failure.reason, backoffMs: Math.round(backoffMs),
              });
            },
          },
        );
        assignments = response.assignments;
      } catch (error) {
        if (this.claimStop.signal.aborted) {
          if (this.stateNow() === 'draining') await this.reconcileClaim(request);
          break;
        }
        const failure = DocketWorkerError.fromCall('ClaimJobs', error);
        if (failure.reason === 'STALE_INCARNATION') this.onIncarnationStale();
        else void this.end('failed', this.options.drainGraceMs, failure);
        break;
      }
      this.stats.claimCalls++;
      this.launch(assignments, Date.now());
      if (assignments.length === 0 && Date.now() - sentAt < EMPTY_CLAIM_FLOOR_MS) {
        await delay(EMPTY_CLAIM_FLOOR_MS + Math.random() * 400, this.claimStop.signal);
      }
    }
  }

  /**
   * A long-poll cut by drain may have claimed jobs just before it was cut:
   * replaying its operation id (same request) returns them, and they run
   * like the others. If the service cannot confirm within a second, any
   * job it did claim is settled when its lease expires.
   */
  private async reconcileClaim(request: MessageInitShape<typeof ClaimJobsRequestSchema>): Promise<void> {
    try {
      const response = await this.connection!.client.claimJobs(request, { timeoutMs: RECONCILE_TIMEOUT_MS });
      this.stats.claimCalls++;
      this.launch(response.assignments, Date.now());
    } catch (error) {
      const failure = DocketWorkerError.fromCall('ClaimJobs', error);
      this.logger.warn(`the interrupted claim could not be confirmed (${failure.reason ?? failure.code}); a job it claimed, if any, is settled when its lease expires`, {
        event: 'claim.unconfirmed', code: failure.code, reason: failure.reason,
      });
    }
  }

  private launch(assignments: readonly Assignment[], receivedAt: number): void {
    if (assignments.length === 0) return;
    const environment = this.attemptEnvironment();
    this.stats.claimed += assignments.length;
    this.pipeline.accept(assignments.map((assignment) => new AttemptRun(assignment, environment, receivedAt)));
  }

  private attemptEnvironment(): AttemptEnvironment {
    const leaseMs = this.registered!.leaseMs;
    return {
      client: this.connection!.client,
      handler: this.options.handler,
      logger: this.logger,
      leaseMs,
      renewIntervalMs: Math.max(20, Math.round(leaseMs * this.options.leaseRenewFraction)),
      callTimeoutMs: this.options.callTimeoutMs,
      signalPollMs: this.options.signalPollMs,
      describeError: this.options.describeError,
      stats: this.stats,
      closed: this.closed.signal,
      onIncarnationStale: () => this.onIncarnationStale(),
    };
  }

  private onIncarnationStale(): void {
    if (this.ending) return;
    const failure = DocketWorkerError.local('WORKER_STATE', 'a later registration of this worker name superseded this incarnation');
    const superseded = new DocketWorkerError(9, 'STALE_INCARNATION', failure.message);
    this.logger.error(`superseded: ${superseded.message}; stopping`, { event: 'worker.superseded', incarnation: this.registered?.incarnation });
    void this.end('superseded', 0, superseded);
  }

  /**
   * The one way a worker ends: stop claiming, give running handlers
   * `graceMs`, ask the rest to stop (`shutdown`, or `lost` when superseded:
   * none of their calls would be accepted), wait a little, then close.
   */
  private end(reason: WorkerExit['reason'], graceMs: number, error: DocketWorkerError | undefined): Promise<void> {
    if (this.currentState === 'idle') {
      this.currentState = 'stopped';
      this.finish(reason, error);
      return Promise.resolve();
    }
    if (this.ending) {
      if (graceMs === 0) this.graceStop.abort();
      return this.ending;
    }
    this.ending = (async () => {
      if (this.currentState === 'starting') {
        this.claimStop.abort();
        await this.starting?.catch(() => undefined);
        if (this.stateNow() === 'stopped') return;
      }
      this.currentState = 'draining';
      this.logger.info(`${reason === 'drained' ? 'draining' : 'stopping'}: no new claims; ${this.pipeline.size} job(s) held`, {
        event: 'worker.draining', running: this.pipeline.size,
      });
      this.claimStop.abort();
      await this.loop;
      this.logger.info('claiming stopped', { event: 'worker.claiming_stopped', running: this.pipeline.size });
      const stopKind: AbortKind = reason === 'superseded' ? 'lost' : 'shutdown';
      if (graceMs === 0) this.graceStop.abort();
      if (!(await this.pipeline.settled(graceMs, this.graceStop.signal))) {
        this.pipeline.requestStop(stopKind);
        await this.pipeline.settled(SHUTDOWN_WAIT_MS);
      }
      const exitReason = reason === 'drained' && this.graceStop.signal.aborted ? 'stopped' : reason;
      this.currentState = 'stopped';
      this.finish(exitReason, error);
    })();
    return this.ending;
  }

  private finish(reason: WorkerExit['reason'], error: DocketWorkerError | undefined): void {
    const abandoned = this.pipeline.size;
    this.closed.abort();
    this.connection?.close();
    this.removeSignalHandlers?.();
    this.logger.info(`stopped (${reason}${abandoned > 0 ? `, ${abandoned} handler(s) abandoned` : ''})`, { event: 'worker.stopped', reason, abandoned });
    this.resolveDone({ reason, ...(error ? { error } : {}), abandoned });
  }

  private installSignalHandlers(): void {
    let seen = false;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (!seen) {
        seen = true;
        this.logger.info(`${signal}: draining (send it again to stop at once)`, { event: 'worker.signal', signal });
        void this.drain();
      } else {
        this.logger.info(`${signal} again: stopping now`, { event: 'worker.signal', signal });
        void this.stop();
      }
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    this.removeSignalHandlers = () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    };
  }
}

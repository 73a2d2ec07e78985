import type { AbortKind } from './abort-reason.js';
import type { AttemptRun } from './attempt-run.js';
import { planUnstarted, type OutcomePlan } from './outcome-plan.js';
import type { WorkerLogger } from './worker-logger.js';
import type { WorkerStats } from './worker-stats.js';

/** The most attempts an incarnation may register to hold (RegisterWorker's `max_concurrency`). */
const MAX_REGISTERED_CONCURRENCY = 1000;

/** The bounds of an {@link AttemptPipeline}. */
export interface PipelineLimits {
  /** Most handlers running at once, and most outcome reports in flight at once. */
  readonly concurrency: number;
  /** Most claimed attempts waiting for a handler slot. */
  readonly prefetch: number;
}

/** How many attempts a worker holds, by where each is: the worker's live counters. */
export interface AttemptCounts {
  /**
   * Attempts held: claimed and not yet concluded (prefetched, running their
   * handler, or with their outcome report in flight); at most
   * 2 × `concurrency` + `prefetch`.
   */
  readonly running: number;
  /** Handlers running now, never above `concurrency`. */
  readonly handlersRunning: number;
  /** ReportOutcome calls in flight now, never above `concurrency`. */
  readonly reportsInFlight: number;
  /** Claimed jobs waiting for a handler slot, never above `prefetch`. */
  readonly prefetched: number;
}

/**
 * The attempts a worker holds, from their claim to their reported outcome,
 * and the bounds that keep claims flowing without letting memory grow:
 *
 * - claimed attempts start at once while a handler slot is free; the others
 *   wait in the prefetch buffer, and a freed slot starts the oldest of them;
 * - at most `concurrency` handlers run;
 * - a settled handler takes a report slot (at most `concurrency` reports in
 *   flight) and frees its handler slot as soon as its ReportOutcome is sent,
 *   so neither the next job nor the next claim waits for the answer. When
 *   every report slot is taken (a slow service), the settled attempt keeps
 *   its handler slot until one frees: back-pressure, not a queue;
 * - an attempt stopped (cancel, pause, lost, shutdown) while it waits in the
 *   buffer never starts: it is concluded at once by `planUnstarted`.
 *
 * Every attempt's lease is renewed from its claim until its report is sent
 * (see `AttemptRun`).
 */
export class AttemptPipeline {
  private readonly limits: PipelineLimits;
  private readonly stats: WorkerStats;
  private readonly logger: WorkerLogger;
  /** Aborts when the worker has stopped: nothing waits for a report slot any more. */
  private readonly closed: AbortSignal;
  /** Every attempt claimed and not yet concluded. */
  private readonly held = new Set<AttemptRun>();
  /** Claimed attempts whose handler has not started, oldest first. */
  private readonly waiting: AttemptRun[] = [];
  /** Attempts holding a handler slot: the handler runs, or has settled and waits for a report slot. */
  private readonly handling = new Set<AttemptRun>();
  /** Attempts whose outcome report is in flight. */
  private readonly reporting = new Set<AttemptRun>();
  private readonly wakers = new Set<() => void>();

  constructor(limits: PipelineLimits, stats: WorkerStats, logger: WorkerLogger, closed: AbortSignal) {
    this.limits = limits;
    this.stats = stats;
    this.logger = logger;
    this.closed = closed;
  }

  /**
   * The most attempts held at once: the handler slots, the report slots and
   * the prefetch buffer. Registered as the incarnation's `max_concurrency`,
   * so the service's own bound lets a claim through while reports are in
   * flight (capped at the service's 1000).
   */
  get capacity(): number {
    return Math.min(MAX_REGISTERED_CONCURRENCY, 2 * this.limits.concurrency + this.limits.prefetch);
  }

  /** Attempts claimed and not yet concluded. */
  get size(): number {
    return this.held.size;
  }

  /** The counters now (a snapshot). */
  get counts(): AttemptCounts {
    return { running: this.held.size, handlersRunning: this.handling.size, reportsInFlight: this.reporting.size, prefetched: this.waiting.length };
  }

  /**
   * How many more jobs may be claimed now: the free handler slots plus the
   * free places in the prefetch buffer. Reports in flight do not count.
   */
  get room(): number {
    return Math.max(0, this.limits.concurrency + this.limits.prefetch - (this.held.size - this.reporting.size));
  }

  /** Takes newly claimed attempts: renews their leases from now on and starts as many as there are free handler slots. */
  accept(runs: readonly AttemptRun[]): void {
    for (const run of runs) {
      this.held.add(run);
      this.waiting.push(run);
      run.keepLeaseAlive();
      run.signal.addEventListener('abort', () => this.stopWhileWaiting(run), { once: true });
    }
    this.startWaiting();
    this.stats.maxPrefetched = Math.max(this.stats.maxPrefetched, this.waiting.length);
    this.changed();
  }

  /** Resolves once a claim may ask for at least one job, or `cut` aborts. */
  async whenRoom(cut: AbortSignal): Promise<void> {
    await this.until(() => this.room > 0, cut);
  }

  /** Whether every held attempt was concluded (its report answered) within `ms`, before `cut` aborts. */
  settled(ms: number, cut?: AbortSignal): Promise<boolean> {
    return this.until(() => this.held.size === 0, cut, ms);
  }

  /** Asks every held attempt to stop; those still waiting in the buffer are concluded without running. */
  requestStop(kind: AbortKind): void {
    for (const run of [...this.held]) run.requestStop(kind);
  }

  private startWaiting(): void {
    while (this.handling.size < this.limits.concurrency && this.waiting.length > 0) {
      const run = this.waiting.shift()!;
      this.handling.add(run);
      this.stats.maxRunning = Math.max(this.stats.maxRunning, this.handling.size);
      this.follow(run, run.runHandler().then((plan) => this.conclude(run, plan)));
    }
  }

  private stopWhileWaiting(run: AttemptRun): void {
    const index = this.waiting.indexOf(run);
    const stop = run.stopKind;
    if (index < 0 || stop === undefined) return; // started already: the handler sees the signal
    this.waiting.splice(index, 1);
    this.follow(run, this.conclude(run, planUnstarted(stop)));
  }

  /**
   * Takes a report slot when there is something to report (waiting for one
   * while all are taken), frees the attempt's handler slot, then reports.
   */
  private async conclude(run: AttemptRun, plan: OutcomePlan): Promise<void> {
    if (plan.kind !== 'none') await this.takeReportSlot(run);
    this.handling.delete(run);
    this.startWaiting();
    this.changed();
    await run.conclude(plan);
  }

  /** Waits until fewer than `concurrency` reports are in flight (or the worker has stopped), then counts `run`'s. */
  private async takeReportSlot(run: AttemptRun): Promise<void> {
    // Checked and taken with no await in between, so that two attempts woken by one change cannot both take the last slot.
    while (this.reporting.size >= this.limits.concurrency && !this.closed.aborted) await this.nextChange(Number.POSITIVE_INFINITY, this.closed);
    this.reporting.add(run);
    this.stats.maxReportsInFlight = Math.max(this.stats.maxReportsInFlight, this.reporting.size);
  }

  /** Lets `run` go once `work` ends, however it ends. */
  private follow(run: AttemptRun, work: Promise<void>): void {
    void work
      .catch((error: unknown) => {
        this.logger.error(`${run.jobId}: the attempt ended unexpectedly`, { event: 'attempt.crashed', jobId: run.jobId, error });
        run.requestStop('lost'); // stops its renewals: the service settles it when its lease expires
      })
      .finally(() => {
        this.handling.delete(run);
        this.reporting.delete(run);
        this.held.delete(run);
        this.startWaiting();
        this.changed();
      });
  }

  /** Whether `condition()` came to hold before `cut` aborted and within `ms`; re-checked after every change. */
  private async until(condition: () => boolean, cut?: AbortSignal, ms = Number.POSITIVE_INFINITY): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!condition()) {
      const remaining = deadline - Date.now();
      if (remaining <= 0 || cut?.aborted) return false;
      await this.nextChange(remaining, cut);
    }
    return true;
  }

  /** Resolves at the next change of the pipeline, after `ms` (when finite), or when `cut` aborts. */
  private nextChange(ms: number, cut: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.wakers.delete(wake);
        cut?.removeEventListener('abort', wake);
        resolve();
      };
      const timer = Number.isFinite(ms) ? setTimeout(wake, ms) : undefined;
      this.wakers.add(wake);
      cut?.addEventListener('abort', wake, { once: true });
    });
  }

  private changed(): void {
    for (const wake of [...this.wakers]) wake();
  }
}

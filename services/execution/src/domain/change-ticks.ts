import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@docket/service-kit';

/** Why {@link TickSubscription.wait} returned. */
export type TickWait = 'tick' | 'timeout' | 'aborted';

/** One waiter's view of the shared change stream: a coalesced "something changed" bit. */
export interface TickSubscription {
  /**
   * Resolves `tick` as soon as a change has been announced since the
   * subscription was made or since the last `tick` it returned (at once if
   * one already was), `timeout` after `timeoutMs`, `aborted` when `signal`
   * aborts. Any number of ticks in between count as one.
   */
  wait(timeoutMs: number, signal: AbortSignal): Promise<TickWait>;
  /**
   * From now on, wakes only for ticks that name one of `queues` (or any
   * queue); a tick already received still counts.
   */
  narrowTo(queues: readonly string[]): void;
  /** Stops receiving ticks. Idempotent. */
  close(): void;
}

/** Reconnection pacing of {@link ChangeTicks}. */
export interface ChangeTicksOptions {
  /** The first pause after the stream breaks; doubled per failed reconnect. Default 100 ms. */
  readonly minBackoffMs?: number;
  /** The longest pause between reconnects. Default 5 s. */
  readonly maxBackoffMs?: number;
}

/**
 * The execution process's one WatchChanges stream from the state service,
 * fanned out in memory to every waiting ClaimJobs: a tick arrives whenever
 * a job change commits through any state replica (Postgres NOTIFY behind
 * it), so a waiting claimer tries again within milliseconds of new work
 * without any claimer holding its own stream or polling.
 *
 * Ticks only say "try again", and name the queues they concern: a
 * subscriber narrowed to some queues wakes only for ticks naming one of
 * them (or any queue). One that is woken needlessly makes one empty claim
 * attempt, and one that misses a tick is caught by its own re-check timer. When the stream breaks (state restarting, network) it is
 * reopened with exponential backoff, and every subscriber is woken both on
 * the break and on the first frame after reconnecting, since changes made
 * in between were not announced.
 */
export class ChangeTicks {
  readonly #subscribers = new Set<Subscriber>();
  readonly #stop = new AbortController();
  readonly #minBackoffMs: number;
  readonly #maxBackoffMs: number;
  #running: Promise<void> | undefined;
  #opened = 0;

  /**
   * @param open opens the stream (`state.watchChanges({}, {signal})`); it must end or throw when `signal` aborts
   */
  constructor(
    private readonly open: (signal: AbortSignal) => AsyncIterable<unknown>,
    private readonly logger: Logger,
    options: ChangeTicksOptions = {},
  ) {
    this.#minBackoffMs = options.minBackoffMs ?? 100;
    this.#maxBackoffMs = options.maxBackoffMs ?? 5_000;
  }

  /** Opens the stream and keeps it open until {@link close}. Idempotent. */
  start(): void {
    this.#running ??= this.#run();
  }

  /** A new subscription; ticks announced from now on wake it. */
  subscribe(): TickSubscription {
    const subscriber = new Subscriber(() => this.#subscribers.delete(subscriber));
    this.#subscribers.add(subscriber);
    return subscriber;
  }

  /** How many subscriptions are open (for tests and metrics). */
  get subscriberCount(): number {
    return this.#subscribers.size;
  }

  /** How many times the stream has been opened, reconnects included (for tests and metrics). */
  get streamsOpened(): number {
    return this.#opened;
  }

  /** Closes the stream for good; subscribers get no more ticks. */
  async close(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }

  async #run(): Promise<void> {
    let backoffMs = this.#minBackoffMs;
    let failures = 0;
    while (!this.#stop.signal.aborted) {
      let framed = false;
      this.#opened += 1;
      try {
        for await (const frame of this.open(this.#stop.signal)) {
          if (!framed) {
            framed = true;
            backoffMs = this.#minBackoffMs;
            if (failures > 0) this.logger.info('change stream restored', { failures });
            failures = 0;
          }
          this.#wake(frame as TickFrame);
        }
      } catch {
        // A broken stream is expected while the state service restarts; handled below.
      }
      if (this.#stop.signal.aborted) return;
      this.#wakeAll();
      failures += 1;
      if (failures === 1) this.logger.warn('change stream to the state service broke, reconnecting');
      await sleep(backoffMs, undefined, { signal: this.#stop.signal }).catch(() => {});
      backoffMs = Math.min(backoffMs * 2, this.#maxBackoffMs);
    }
  }

  #wakeAll(): void {
    for (const subscriber of this.#subscribers) subscriber.ring();
  }

  #wake(frame: TickFrame): void {
    if (frame.anyQueue !== false || !frame.claimableQueues) return this.#wakeAll();
    for (const subscriber of this.#subscribers) subscriber.ringFor(frame.claimableQueues);
  }
}

/** A WatchChanges frame; a frame that names no queues wakes everyone. */
interface TickFrame {
  readonly claimableQueues?: readonly string[];
  readonly anyQueue?: boolean;
}

/** One subscription: a coalescing bit and at most one waiter. */
class Subscriber implements TickSubscription {
  #rung = false;
  #settle: ((outcome: TickWait) => void) | undefined;
  #queues: ReadonlySet<string> | undefined;

  constructor(private readonly unsubscribe: () => void) {}

  narrowTo(queues: readonly string[]): void {
    this.#queues = new Set(queues);
  }

  ringFor(queues: readonly string[]): void {
    if (this.#queues === undefined || queues.some((queue) => this.#queues?.has(queue))) this.ring();
  }

  ring(): void {
    this.#rung = true;
    this.#settle?.('tick');
  }

  wait(timeoutMs: number, signal: AbortSignal): Promise<TickWait> {
    if (this.#rung) {
      this.#rung = false;
      return Promise.resolve('tick');
    }
    if (signal.aborted) return Promise.resolve('aborted');
    return new Promise((resolve) => {
      const settle = (outcome: TickWait): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.#settle = undefined;
        if (outcome === 'tick') this.#rung = false;
        resolve(outcome);
      };
      const onAbort = (): void => settle('aborted');
      const timer = setTimeout(() => settle('timeout'), Math.max(0, timeoutMs));
      signal.addEventListener('abort', onAbort, { once: true });
      this.#settle = settle;
    });
  }

  close(): void {
    this.#settle?.('aborted');
    this.unsubscribe();
  }
}

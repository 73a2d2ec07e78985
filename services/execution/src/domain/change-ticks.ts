import { SharedUpstream, WakeSignal, type Logger, type SharedUpstreamOptions } from '@docket/service-kit';

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

/** Reconnection pacing of {@link ChangeTicks} (defaults: 100 ms doubling to 5 s). */
export type ChangeTicksOptions = Pick<SharedUpstreamOptions<TickFrame>, 'minBackoffMs' | 'maxBackoffMs'>;

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
 * attempt, and one that misses a tick is caught by its own re-check timer.
 * The stream is a {@link SharedUpstream}: when it breaks (state
 * restarting, network) it is reopened with backoff, and every subscriber
 * is woken both on the break and on the first frame of each stream, since
 * changes made in between were not announced.
 */
export class ChangeTicks {
  readonly #subscribers = new Set<Subscriber>();
  readonly #upstream: SharedUpstream<TickFrame>;

  /**
   * @param open opens the stream (`state.watchChanges({}, {signal})`); it must end or throw when `signal` aborts
   */
  constructor(open: (signal: AbortSignal) => AsyncIterable<TickFrame>, logger: Logger, options: ChangeTicksOptions = {}) {
    this.#upstream = new SharedUpstream({
      name: 'change stream to the state service',
      open,
      onFrame: (frame) => this.#wake(frame),
      onGap: () => this.#wakeAll(),
      logger,
      ...options,
    });
  }

  /** Opens the stream and keeps it open until {@link close}. Idempotent. */
  start(): void {
    this.#upstream.start();
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
    return this.#upstream.streamsOpened;
  }

  /** Closes the stream for good; subscribers get no more ticks. */
  close(): Promise<void> {
    return this.#upstream.close();
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
export interface TickFrame {
  readonly claimableQueues?: readonly string[];
  readonly anyQueue?: boolean;
}

/** One subscription: a wake-up bit and the queues it is narrowed to. */
class Subscriber implements TickSubscription {
  readonly #wake = new WakeSignal();
  #queues: ReadonlySet<string> | undefined;

  constructor(private readonly unsubscribe: () => void) {}

  narrowTo(queues: readonly string[]): void {
    this.#queues = new Set(queues);
  }

  ringFor(queues: readonly string[]): void {
    if (this.#queues === undefined || queues.some((queue) => this.#queues?.has(queue))) this.ring();
  }

  ring(): void {
    this.#wake.ring();
  }

  async wait(timeoutMs: number, signal: AbortSignal): Promise<TickWait> {
    const outcome = await this.#wake.wait(timeoutMs, signal);
    return outcome === 'rung' ? 'tick' : outcome;
  }

  close(): void {
    this.#wake.close();
    this.unsubscribe();
  }
}

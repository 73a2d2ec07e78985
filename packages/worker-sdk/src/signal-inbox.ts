import type { JsonObject } from '@bufbuild/protobuf';
import type { Signal } from '@docket/proto/docket/common/v1/signal_pb.js';

/**
 * One signal the job's owner sent (AdmissionService.SendSignal), as a
 * handler takes it from `job.signals`.
 */
export interface JobSignal {
  /** The signal's per-job sequence, contiguous from 1 in the order the job accepted them. */
  readonly sequence: bigint;
  /** The name the sender chose; dispatch on it. */
  readonly name: string;
  /** The sender's payload (a JSON object; `{}` when none was sent). */
  readonly payload: JsonObject;
  /**
   * True when an earlier attempt already received this signal and was lost
   * before acknowledging it, and the owner chose ReconcileSignals
   * REDELIVER: that attempt may have acted on it, so check before acting
   * again.
   */
  readonly redelivered: boolean;
}

/** What a {@link SignalInbox} needs from its attempt. */
export interface SignalInboxOptions {
  /**
   * Acknowledges every signal up to and including `upTo` (AckSignals).
   * Rejects when the acknowledgement did not land; the inbox tries again
   * with the next signal taken, or at {@link SignalInbox.flush}.
   */
  acknowledge(upTo: bigint): Promise<void>;
  /** Told when a consumer starts or stops waiting on an empty inbox (so the attempt can poll for signals sooner). */
  onWaiting?(waiting: boolean): void;
}

/** The signal from the wire as a {@link JobSignal}. */
export function jobSignalOf(signal: Signal): JobSignal {
  return Object.freeze({ sequence: signal.sequence, name: signal.name, payload: signal.payload ?? {}, redelivered: signal.redelivered });
}

/**
 * The signals delivered to one attempt, between the execution service and
 * the handler's `for await (const signal of job.signals)`.
 *
 * - The service hands signals in the claim envelope and repeats every
 *   unacknowledged one in each renewal; {@link deliver} keeps only
 *   sequences above the highest already received, so each signal is
 *   yielded once, in sequence order, however often it is repeated.
 * - Signals that arrive while nobody iterates are buffered.
 * - A signal is acknowledged only after the handler has taken it: when the
 *   iterator is asked for the next value after yielding it, when the
 *   iteration ends (`break`, a throw, `return()`), or at {@link flush}.
 *   Acknowledgements are cumulative (AckSignals `up_to_sequence`), sent
 *   one at a time, each covering every signal taken by then.
 * - {@link end} (the attempt ended: the handler settled, or the job's
 *   signal aborted) ends every iteration; signals buffered but never
 *   yielded are not acknowledged.
 *
 * Iterate from one place: two concurrent iterations share the one queue,
 * each signal going to whichever asked first.
 */
export class SignalInbox implements AsyncIterable<JobSignal> {
  private readonly options: SignalInboxOptions;
  private readonly buffer: JobSignal[] = [];
  private readonly waiters: ((result: IteratorResult<JobSignal>) => void)[] = [];
  /** The highest sequence delivered to this inbox so far (yielded or buffered). */
  private highestReceived = 0n;
  /** The highest sequence yielded to the handler. */
  private highestYielded = 0n;
  /** The highest sequence the handler has surely taken (yielded, and the iterator asked again or ended). */
  private highestTaken = 0n;
  /** The highest sequence acknowledged. */
  private highestAcked = 0n;
  private acking: Promise<void> | undefined;
  private ended = false;

  constructor(options: SignalInboxOptions) {
    this.options = options;
  }

  /** Whether a consumer is waiting on an empty inbox. */
  get waiting(): boolean {
    return this.waiters.length > 0;
  }

  /** The highest sequence acknowledged so far (0 for none). */
  get acknowledged(): bigint {
    return this.highestAcked;
  }

  /** Adds the signals of an envelope or renewal; repeats and older sequences are dropped. Ignored once ended. */
  deliver(signals: Iterable<JobSignal>): void {
    if (this.ended) return;
    const fresh = [...signals].filter((signal) => signal.sequence > this.highestReceived).sort((a, b) => (a.sequence < b.sequence ? -1 : 1));
    for (const signal of fresh) {
      if (signal.sequence <= this.highestReceived) continue; // the same sequence twice in one batch
      this.highestReceived = signal.sequence;
      this.buffer.push(signal);
    }
    const wasWaiting = this.waiting;
    while (this.waiters.length > 0 && this.buffer.length > 0) this.waiters.shift()!({ done: false, value: this.yieldNext() });
    if (wasWaiting && !this.waiting) this.options.onWaiting?.(false);
  }

  /** Ends every iteration (pending ones resolve `done`) and acknowledges what the handler took. Idempotent. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.buffer.length = 0;
    const wasWaiting = this.waiting;
    for (const wake of this.waiters.splice(0)) wake({ done: true, value: undefined });
    if (wasWaiting) this.options.onWaiting?.(false);
    this.markTaken();
  }

  /**
   * Acknowledges every signal yielded so far (the handler is done with
   * them: it settled, or is about to end the attempt with an approval
   * request) and resolves when that acknowledgement has landed or failed.
   * Never rejects.
   */
  async flush(): Promise<void> {
    this.highestTaken = this.highestYielded;
    while (this.acking) await this.acking;
    if (this.highestTaken > this.highestAcked) await this.startAcking();
  }

  [Symbol.asyncIterator](): AsyncIterator<JobSignal> {
    let finished = false;
    return {
      next: () => {
        this.markTaken();
        if (finished || this.ended) return Promise.resolve({ done: true, value: undefined });
        if (this.buffer.length > 0) return Promise.resolve({ done: false, value: this.yieldNext() });
        return new Promise((resolve) => {
          this.waiters.push(resolve);
          if (this.waiters.length === 1) this.options.onWaiting?.(true);
        });
      },
      return: () => {
        finished = true;
        this.markTaken();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }

  private yieldNext(): JobSignal {
    const signal = this.buffer.shift()!;
    this.highestYielded = signal.sequence;
    return signal;
  }

  /** Everything yielded so far has been taken: acknowledge it (in the background). */
  private markTaken(): void {
    if (this.highestYielded > this.highestTaken) this.highestTaken = this.highestYielded;
    if (!this.acking && this.highestTaken > this.highestAcked) void this.startAcking();
  }

  /** Sends acknowledgements one at a time until the highest taken sequence is acknowledged, or one fails. */
  private startAcking(): Promise<void> {
    const run: Promise<void> = this.acknowledgeTaken().finally(() => {
      if (this.acking === run) this.acking = undefined;
    });
    this.acking = run;
    return run;
  }

  private async acknowledgeTaken(): Promise<void> {
    while (this.highestTaken > this.highestAcked) {
      const upTo = this.highestTaken;
      try {
        await this.options.acknowledge(upTo);
      } catch {
        return; // tried again with the next signal taken, or at flush()
      }
      if (upTo > this.highestAcked) this.highestAcked = upTo;
    }
  }
}

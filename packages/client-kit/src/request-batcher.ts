import { Code, ConnectError } from '@connectrpc/connect';

/** Each item's own answer from a decided batch: a value or the error for that item alone. */
export type ItemOutcome<Result> = { readonly ok: true; readonly value: Result } | { readonly ok: false; readonly error: unknown };

/** An item waiting for its batch, with the way back to its caller. */
interface Waiting<Item, Result> {
  readonly item: Item;
  readonly settle: (outcome: ItemOutcome<Result>) => void;
  /**
   * Runs a function in the async context the item was submitted in; kept
   * only for an item that will wait and head a batch (an item sent at the
   * end of its own turn is decided in its caller's context anyway, the
   * flush being scheduled in it, and a snapshot per item costs).
   */
  readonly inCallerContext: InContext | undefined;
  /** `performance.now()` at which its caller stops waiting; undefined without a deadline. */
  readonly deadlineAt: number | undefined;
}

/** Runs a function in the async context captured when it was made (`AsyncLocalStorage.snapshot()`). */
export type InContext = <R>(fn: () => R) => R;

/** Runs `fn` once the event loop's current turn is over: `setImmediate` where there is one (Node), else a zero timeout (browsers). */
const atTurnEnd: (fn: () => void) => void = typeof setImmediate === 'function' ? (fn) => void setImmediate(fn) : (fn) => void setTimeout(fn, 0);

/** What a batch is decided within. */
export interface BatchBudget {
  /**
   * Milliseconds until the last of its callers stops waiting, to bound the
   * batch's work (a transaction's statement timeout, the next hop's
   * deadline); undefined when some caller set no deadline.
   */
  readonly timeoutMs: number | undefined;
}

/** Options of one {@link RequestBatcher.submit}. */
export interface SubmitOptions {
  /** How long the caller waits; an item still waiting when it passes is answered DEADLINE_EXCEEDED and never decided. */
  readonly timeoutMs?: number;
}

/** How a {@link RequestBatcher} forms batches. */
export interface RequestBatcherOptions<Item = unknown> {
  /** The most items one batch carries. */
  readonly maxBatch: number;
  /** How many batches may be in flight at once (each holds one connection); beyond the first, only full ones, or those {@link startsBeside} lets go. */
  readonly maxInFlight: number;
  /**
   * Which waiting items may go at once as a partial batch beside the
   * running ones (`running`: the items of each batch in flight), within
   * `maxInFlight`; the others keep waiting, in order. The state service
   * lets the claims go beside a batch of reports alone, and the reports
   * beside a batch of claims alone. Without it (or when it answers
   * undefined), only a full batch goes beside a running one.
   */
  readonly startsBeside?: (running: readonly (readonly Item[])[]) => ((item: Item) => boolean) | undefined;
  /**
   * Captures the async context a batch is then decided in (a service passes
   * `AsyncLocalStorage.snapshot`: the batch's RPC and queries are traced and
   * logged as its first caller's); without it, a batch runs in whatever
   * context its flush happens to run.
   */
  readonly captureContext?: () => InContext;
}

/**
 * Batches concurrent requests by arrival: items that arrive while batches
 * are in flight are decided together in the next batch, so what a batch
 * costs (one transaction and its WAL flush, one RPC to another service) is
 * shared by every item in it. This is the group commit of the state
 * service's write paths and the coalescing of the front services' calls to
 * it. Nothing waits for a batch to fill: while no batch is running, an
 * arriving item is sent at the end of the event loop's turn it arrived in
 * (`setImmediate`), with every item submitted in that turn: the items of
 * one incoming RPC, or the requests one socket read delivered, share a
 * batch instead of the first going alone. An idle system answers a single
 * caller as fast as without batching, but for that turn's end. The
 * services batch their writes and their calls to the state service with
 * it, and the client its coalesced submissions.
 *
 * Beside a running batch, another starts only when it is full (`maxBatch`
 * items waiting), up to `maxInFlight` at once: waiting could not make it
 * bigger, so a bulk load keeps several transactions busy, while a partial
 * batch waits for the running one to end and grows meanwhile (two partial
 * batches cost more per item than one that waited:
 * docs/write-path.md#batches-in-flight), but for the items `startsBeside` picks.
 *
 * `decide` answers every item of its batch in order; if it throws, every
 * item of that batch gets the error (none of them was acknowledged).
 *
 * With `captureContext`, a batch is decided in the async context of its
 * first item's caller (its request id, its trace span), whichever batch
 * finished before it: a batch's RPC and queries are traced and logged as
 * part of that call.
 *
 * An item submitted with a deadline whose deadline has passed by the time
 * its batch is formed is answered DEADLINE_EXCEEDED and left out: nothing
 * is done for a caller that has stopped waiting. `decide` learns how long
 * the latest of its callers still waits ({@link BatchBudget}).
 */
export class RequestBatcher<Item, Result> {
  readonly #waiting: Waiting<Item, Result>[] = [];
  /** The items of each batch in flight. */
  readonly #running = new Set<readonly Item[]>();
  /** Whether a flush is already scheduled for the end of this turn. */
  #flushScheduled = false;

  constructor(
    private readonly decide: (items: readonly Item[], budget: BatchBudget) => Promise<readonly ItemOutcome<Result>[]>,
    private readonly options: RequestBatcherOptions<Item>,
  ) {}

  /** Decides `item` in the next batch and resolves (or rejects) with its own answer. */
  submit(item: Item, options: SubmitOptions = {}): Promise<Result> {
    const sentThisTurn = this.#running.size === 0 && this.#waiting.length === 0;
    const headsABatch = this.#waiting.length % this.options.maxBatch === 0;
    return new Promise<Result>((resolve, reject) => {
      this.#waiting.push({
        item,
        settle: (outcome) => (outcome.ok ? resolve(outcome.value) : reject(outcome.error)),
        inCallerContext: !sentThisTurn && headsABatch ? this.options.captureContext?.() : undefined,
        deadlineAt: options.timeoutMs === undefined ? undefined : performance.now() + options.timeoutMs,
      });
      this.#scheduleFlush();
    });
  }

  /** Items waiting for a batch, and batches in flight (for tests and metrics). */
  get load(): { readonly waiting: number; readonly inFlight: number } {
    return { waiting: this.#waiting.length, inFlight: this.#running.size };
  }

  /**
   * Flushes at the end of this turn, once however many items arrive in it.
   * The callback runs in the async context of the item that scheduled it:
   * the first of the turn, which is the one that heads its batch.
   */
  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    atTurnEnd(() => {
      this.#flushScheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    for (;;) {
      const taken = this.#nextBatch();
      if (taken === undefined) return;
      const now = performance.now();
      const batch = taken.filter((entry) => {
        if (entry.deadlineAt === undefined || entry.deadlineAt > now) return true;
        entry.settle({ ok: false, error: new ConnectError('the deadline passed before the call was decided', Code.DeadlineExceeded) });
        return false;
      });
      if (batch.length === 0) continue;
      const items = batch.map((entry) => entry.item);
      this.#running.add(items);
      void this.#run(batch, items, now);
    }
  }

  /**
   * The items of the next batch to start, taken off the queue, if one may
   * start: the first goes whatever its size; one beside it only when full,
   * or with the items `startsBeside` picks, up to `maxInFlight`.
   */
  #nextBatch(): Waiting<Item, Result>[] | undefined {
    if (this.#waiting.length === 0) return undefined;
    if (this.#running.size === 0 || (this.#running.size < this.options.maxInFlight && this.#waiting.length >= this.options.maxBatch)) {
      return this.#waiting.splice(0, this.options.maxBatch);
    }
    if (this.#running.size >= this.options.maxInFlight) return undefined;
    const picks = this.options.startsBeside?.([...this.#running]);
    if (picks === undefined) return undefined;
    const batch: Waiting<Item, Result>[] = [];
    for (let index = 0; index < this.#waiting.length && batch.length < this.options.maxBatch; ) {
      const entry = this.#waiting[index]!;
      if (picks(entry.item)) batch.push(...this.#waiting.splice(index, 1));
      else index += 1;
    }
    return batch.length > 0 ? batch : undefined;
  }

  async #run(batch: Waiting<Item, Result>[], items: readonly Item[], formedAt: number): Promise<void> {
    try {
      const deadlines = batch.map((entry) => entry.deadlineAt);
      const budget: BatchBudget = {
        // Whole milliseconds: a deadline header must not carry a fraction.
        timeoutMs: deadlines.every((at) => at !== undefined) ? Math.ceil(Math.max(...deadlines) - formedAt) : undefined,
      };
      // The first caller's context, or (when earlier items expired) another caller's of this batch.
      const inCallerContext = batch.find((entry) => entry.inCallerContext !== undefined)?.inCallerContext;
      const decide = () => this.decide(items, budget);
      const outcomes = await (inCallerContext ? inCallerContext(decide) : decide());
      batch.forEach((entry, index) => entry.settle(outcomes[index] ?? { ok: false, error: new Error('the batch gave this item no answer') }));
    } catch (error) {
      for (const entry of batch) entry.settle({ ok: false, error });
    } finally {
      this.#running.delete(items);
      this.#flush();
    }
  }
}

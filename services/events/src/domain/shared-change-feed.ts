import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@connectrpc/connect';
import { callWithRetry } from '@docket/client-kit';
import type { Caller, JobChange, ReadJobChangesResponse, StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { FeedCursorPosition, Logger } from '@docket/service-kit';
import type { JobSignalHub } from './job-signal-hub.js';
import { STATE_CALL_TIMEOUT_MS, stateRetry } from './state-retry.js';

/** Feed entries examined per ReadJobChanges call. */
export const FEED_BATCH = 256;

/**
 * How many of the latest feed entries the process keeps for its WatchJobs
 * subscribers. A subscriber further behind than this (a slow client, a
 * resumed older cursor) reads the feed on its own after its cursor until
 * it is within the window again.
 */
export const FEED_WINDOW = 8_192;

/**
 * How soon to look again while an older, still-running transaction holds
 * entries back. Its commit also produces a tick, but the transaction
 * holding the horizon need not be a job change at all.
 */
const HELD_BACK_RECHECK_MS = 200;

/** The pause after a failed walk (the state service stayed away for the whole retry budget). */
const FAILED_WALK_PAUSE_MS = 1_000;

/**
 * Subscribers woken per turn of the event loop. Each one woken sends its
 * frames at once, so a thousand subscribers that see every change would
 * otherwise hold the loop for the whole fan-out, and a job tail or a call
 * arriving meanwhile would wait behind all of them.
 */
const WAKE_SLICE = 16;

/** Who the walk reads the feed as: an admin sees every entry, and subscribers are filtered here. */
const FEED_READER: Caller = { $typeName: 'docket.state.v1.Caller', subject: 'docket-events', admin: true };

/** What {@link SharedChangeFeed.next} found after a position. */
export type FeedStep =
  | {
      readonly kind: 'entry';
      readonly change: JobChange;
      readonly position: FeedCursorPosition;
      /** Where the entry sits in the walk (it only grows): `index + 1` is the hint that finds the entry after it at once. */
      readonly index: number;
    }
  | { readonly kind: 'caught-up' }
  | { readonly kind: 'behind' };

/**
 * The events process's one walk along the change feed, for all of its
 * WatchJobs subscribers: each change is read from the state service once
 * per process (as an admin, unfiltered) into a window of the latest
 * {@link FEED_WINDOW} entries, and every subscriber takes what follows its
 * own position from the window, filtering by ownership and its filter in
 * memory. The window holds the feed's entries contiguously and in its one
 * total order, so taking from it is exactly reading the feed after that
 * position: the same order and the same no-skip guarantee.
 *
 * The walk runs while anyone subscribes: woken by the hub's feed news (and
 * gaps), and every 200 ms while entries are held back; it stops and
 * forgets the window when the last subscriber leaves.
 */
export class SharedChangeFeed {
  /** The window: feed entries, each with its position set, in feed order. */
  readonly #entries: JobChange[] = [];
  /** The position just before the first entry of the window; the window covers (base, head]. */
  #base: FeedCursorPosition | undefined;
  /** Entries dropped from the window's start since the walk began: the walk index of `#entries[0]`. */
  #dropped = 0;
  #head: FeedCursorPosition | undefined;
  readonly #subscribers = new Set<() => void>();
  #dirty = false;
  #waking: Promise<void> | undefined;
  #wakeAgain = false;
  #walking: Promise<void> | undefined;
  #stop: AbortController | undefined;
  #unwatch: (() => void) | undefined;

  constructor(
    private readonly state: Client<typeof StateService>,
    private readonly hub: JobSignalHub,
    private readonly logger: Logger,
  ) {}

  /** Adds a subscriber, woken whenever the window grows; returns the unsubscribe function. */
  subscribe(wake: () => void): () => void {
    this.#subscribers.add(wake);
    if (this.#subscribers.size === 1) this.#begin();
    return () => {
      if (!this.#subscribers.delete(wake) || this.#subscribers.size > 0) return;
      this.#end();
    };
  }

  /** The walk's current head (read from the state service when the walk has none yet): where a resync starts. */
  async head(signal: AbortSignal): Promise<FeedCursorPosition> {
    if (this.#head) return this.#head;
    const batch = await this.#read(undefined, 1, signal);
    const head = batch.position!;
    if (!this.#head) {
      this.#base = head;
      this.#head = head;
      // Subscribers that asked before there was a window were told they are caught up: now there is one to walk.
      void this.#wakeSubscribers();
    }
    return this.#head;
  }

  /**
   * The entry right after `position`, or that it is the head (`caught-up`),
   * or before the window (`behind`). `hint`, the `index + 1` of the entry
   * a subscriber took last, finds the next one without a search when
   * nothing came between (checked: a stale hint only costs the search).
   */
  next(position: FeedCursorPosition, hint = -1): FeedStep {
    if (!this.#base || !this.#head || compare(position, this.#head) >= 0) return { kind: 'caught-up' };
    if (compare(position, this.#base) < 0) return { kind: 'behind' };
    // The window holds every entry in (base, head], so the first one after any position in it is the feed's next entry.
    const hinted = hint - this.#dropped;
    const at = this.#isFirstAfter(hinted, position) ? hinted : this.#firstAfter(position);
    const change = this.#entries[at];
    return change ? { kind: 'entry', change, position: positionOf(change), index: this.#dropped + at } : { kind: 'caught-up' };
  }

  /** A subscriber's own read of the feed, for when it is behind the window. */
  read(caller: Caller, after: FeedCursorPosition | undefined, filter: { statuses: number[]; queue: string }, signal: AbortSignal): Promise<ReadJobChangesResponse> {
    return callWithRetry(
      () =>
        this.state.readJobChanges(
          { caller, after: after ? { transactionId: after.transactionId, entryId: after.entryId } : undefined, filter, limit: FEED_BATCH },
          { signal, timeoutMs: STATE_CALL_TIMEOUT_MS },
        ),
      stateRetry(signal),
    );
  }

  /** Entries in the window (for tests and metrics). */
  get windowSize(): number {
    return this.#entries.length;
  }

  #begin(): void {
    this.#stop = new AbortController();
    this.#unwatch = this.hub.watchFeed(() => this.#wakeWalk());
    this.#wakeWalk();
  }

  #end(): void {
    this.#unwatch?.();
    this.#unwatch = undefined;
    this.#stop?.abort();
    this.#entries.length = 0;
    this.#dropped = 0;
    this.#base = undefined;
    this.#head = undefined;
  }

  #wakeWalk(): void {
    this.#dirty = true;
    const stop = this.#stop;
    if (this.#walking || !stop || stop.signal.aborted) return;
    this.#walking = this.#walk(stop).finally(() => {
      this.#walking = undefined;
      // A walk that ended because its subscribers left may have been asked for by new ones meanwhile.
      if (this.#dirty) this.#wakeWalk();
    });
  }

  /** Reads the feed after the head until nothing more is released, while anyone subscribes. */
  async #walk(stop: AbortController): Promise<void> {
    while (this.#dirty && !stop.signal.aborted) {
      this.#dirty = false;
      try {
        let heldBack = false;
        for (;;) {
          const head = await this.head(stop.signal);
          const batch = await this.#read(head, FEED_BATCH, stop.signal);
          if (stop.signal.aborted) return;
          // Subscribers wait for the head to move: a batch with nothing new released is no news to them.
          if (this.#append(batch)) await this.#wakeSubscribers();
          heldBack = batch.heldBack;
          if (batch.changes.length < FEED_BATCH) break;
        }
        if (heldBack) {
          await sleep(HELD_BACK_RECHECK_MS, undefined, { signal: stop.signal }).catch(() => {});
          this.#dirty = true;
        }
      } catch {
        if (stop.signal.aborted) return;
        this.logger.warn('change feed walk failed, trying again');
        await sleep(FAILED_WALK_PAUSE_MS, undefined, { signal: stop.signal }).catch(() => {});
        this.#dirty = true;
      }
    }
  }

  /**
   * Wakes every subscriber, {@link WAKE_SLICE} per turn of the event loop,
   * so I/O is served between slices. One pass at a time: asked again
   * during a pass, it makes one more pass after it.
   */
  #wakeSubscribers(): Promise<void> {
    if (this.#waking) {
      this.#wakeAgain = true;
      return this.#waking;
    }
    this.#waking = (async () => {
      let woken = 0;
      do {
        this.#wakeAgain = false;
        for (const wake of [...this.#subscribers]) {
          wake();
          woken += 1;
          if (woken % WAKE_SLICE === 0) await nextTurn();
        }
      } while (this.#wakeAgain);
    })().finally(() => {
      this.#waking = undefined;
    });
    return this.#waking;
  }

  /** Adds a batch read after the head to the window; returns whether the head moved. */
  #append(batch: ReadJobChangesResponse): boolean {
    for (const change of batch.changes) if (change.position) this.#entries.push(change);
    const before = this.#head;
    if (batch.position) this.#head = positionOf(batch);
    const excess = this.#entries.length - FEED_WINDOW;
    if (excess > 0) {
      this.#base = positionOf(this.#entries.splice(0, excess).at(-1)!);
      this.#dropped += excess;
    }
    return !before || !this.#head || compare(before, this.#head) !== 0;
  }

  #read(after: FeedCursorPosition | undefined, limit: number, signal: AbortSignal): Promise<ReadJobChangesResponse> {
    return callWithRetry(
      () =>
        this.state.readJobChanges(
          { caller: FEED_READER, after: after ? { transactionId: after.transactionId, entryId: after.entryId } : undefined, limit },
          { signal, timeoutMs: STATE_CALL_TIMEOUT_MS },
        ),
      stateRetry(signal),
    );
  }

  /** The index of the first entry after `position` (binary search; the window is in feed order). */
  #firstAfter(position: FeedCursorPosition): number {
    let low = 0;
    let high = this.#entries.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compare(this.#entries[middle]!.position!, position) <= 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** Whether the entry at window index `at` is the first after `position`: `position` is at or after the one before it (or the base) and before it. */
  #isFirstAfter(at: number, position: FeedCursorPosition): boolean {
    if (at < 0 || at >= this.#entries.length) return false;
    const previous = at === 0 ? this.#base! : this.#entries[at - 1]!.position!;
    return compare(position, previous) >= 0 && compare(position, this.#entries[at]!.position!) < 0;
  }
}

function positionOf(source: { readonly position?: { readonly transactionId: bigint; readonly entryId: bigint } }): FeedCursorPosition {
  return { transactionId: source.position!.transactionId, entryId: source.position!.entryId };
}

/** Orders feed positions: (transaction id, entry id). */
export function compare(a: FeedCursorPosition, b: FeedCursorPosition): number {
  if (a.transactionId !== b.transactionId) return a.transactionId < b.transactionId ? -1 : 1;
  if (a.entryId !== b.entryId) return a.entryId < b.entryId ? -1 : 1;
  return 0;
}

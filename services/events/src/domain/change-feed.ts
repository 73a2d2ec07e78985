import { create, type MessageInitShape } from '@bufbuild/protobuf';
import type { Principal } from '@docket/auth';
import { callWithRetry } from '@docket/client-kit';
import {
  ResyncReason,
  WatchJobsResponseSchema,
  type WatchJobsRequest,
  type WatchJobsResponse,
} from '@docket/proto/docket/events/v1/event_service_pb.js';
import type { Caller, JobChange } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { FeedCursorBinding, FeedCursorPosition, StreamSink } from '@docket/service-kit';
import { callerOf, sharedFrame } from '@docket/service-kit';
import type { EventDependencies, StreamSignals } from './event-dependencies.js';
import { parseFeedFilter } from './feed-filter.js';
import { stateRetry } from './state-retry.js';
import { SubscriberSession } from './subscriber-session.js';

/**
 * WatchJobs: the global change feed (SPEC section 6) for the caller and a
 * filter, one `job_changed` frame per visible change in the feed's total
 * order, each carrying the cursor that resumes right after it.
 *
 * The order and the no-skip guarantee come from the state service:
 * entries are ordered by (transaction id, entry id) and released only
 * below the oldest running transaction, so nothing can later appear
 * behind a position this stream has passed. The process reads the feed
 * once for all of its subscribers ({@link SharedChangeFeed}); this stream
 * walks that order after its own position, taking entries from the shared
 * window and keeping those the caller may see and its filter admits. A
 * stream whose position is older than the window (a resumed cursor, a
 * client that stopped reading for long) reads the feed on its own, one
 * batch at a time, until it reaches the window: it never skips and never
 * makes the process buffer for it.
 *
 * A stream that is parked at the head when the window grows is sent the new
 * frames at once, by the walk's wake-up itself, through the stream's sink
 * where it has one (binary gRPC): a thousand subscribers of one change cost
 * a thousand writes, not a thousand generator resumptions. Whatever the
 * sink refuses (the client has not drained, the stream is ending) the
 * stream's own loop sends, from the same position.
 *
 * An absent, invalid, expired or foreign cursor is not an error: the first
 * frame is `resync_required` with a cursor at the current head, and the
 * stream continues from there. While the process's upstream is lost (a
 * state restart) the stream sends no heartbeats; once it is back, the feed
 * is read again after the stream's position.
 */
export async function* watchJobs(
  deps: EventDependencies,
  principal: Principal,
  request: WatchJobsRequest,
  signals: StreamSignals,
  sink: StreamSink | undefined,
): AsyncGenerator<WatchJobsResponse, void, undefined> {
  const filter = parseFeedFilter(request.filter);
  const feed = new ChangeFeedSubscription(deps, callerOf(principal), { subject: principal.subject, filter }, signals, sink);
  deps.gauge.opened('change_feeds');
  try {
    yield* feed.run(request.cursor);
  } finally {
    feed.close();
    deps.gauge.closed('change_feeds');
  }
}

/** One subscriber's walk along the change feed. */
class ChangeFeedSubscription {
  #position: FeedCursorPosition | undefined;
  /** The walk index after the window entry taken last (`SharedChangeFeed.next`'s hint). */
  #hint = -1;
  #readNeeded = true;
  readonly #bindingKey: string;
  /** Whether the loop waits at the head with nothing yielded and unsent, so the walk may send new entries through the sink. */
  #parked = false;
  readonly #session: SubscriberSession;
  readonly #unsubscribe: () => void;

  constructor(
    private readonly deps: EventDependencies,
    private readonly caller: Caller,
    private readonly binding: FeedCursorBinding,
    private readonly signals: StreamSignals,
    private readonly sink: StreamSink | undefined,
  ) {
    this.#session = new SubscriberSession(signals, deps.heartbeatMs, deps.hub);
    this.#bindingKey = bindingKeyOf(binding);
    this.#unsubscribe = deps.feed.subscribe(() => {
      if (this.#parked && this.#offerNews()) return;
      this.#readNeeded = true;
      this.#session.wake.ring();
    });
  }

  async *run(cursor: string): AsyncGenerator<WatchJobsResponse, void, undefined> {
    await this.#session.untilLive();
    const opened = this.deps.cursors.open(cursor, this.binding);
    if (opened.ok) {
      this.#position = opened.position;
    } else {
      this.#position = await callWithRetry(() => this.deps.feed.head(this.signals.signal), stateRetry(this.signals.signal));
      yield this.#sent({ case: 'resyncRequired', value: { reason: ResyncReason[opened.refusal] } });
    }
    for (;;) {
      if (this.#readNeeded) {
        this.#readNeeded = false;
        yield* this.#catchUp();
      }
      this.#parked = this.sink !== undefined;
      const turn = await this.#session.next();
      this.#parked = false;
      if (turn === 'cancelled') return;
      if (turn !== 'rung') yield this.#sent({ case: 'heartbeat', value: {} });
      if (turn === 'drain') return;
    }
  }

  /** Leaves the shared feed and releases every listener. */
  close(): void {
    this.#unsubscribe();
    this.#session.close();
  }

  /**
   * Offers the sink every visible change the window holds after the
   * position, advancing the position past each one taken (and past those
   * the caller does not see). Returns whether that reached the head; false
   * when the sink refused one or the position is behind the window, and
   * the loop must catch up on its own.
   */
  #offerNews(): boolean {
    for (;;) {
      if (this.#session.stopping) return true;
      const step = this.deps.feed.next(this.#position!, this.#hint);
      if (step.kind === 'caught-up') return true;
      if (step.kind === 'behind') return false;
      if (this.#admits(step.change) && !this.sink!.offer(this.#changed(step.change, step.position))) return false;
      this.#position = step.position;
      this.#hint = step.index + 1;
    }
  }

  /**
   * Sends every visible change after the position, from the shared window
   * or, when behind it, from reads of its own. Each frame goes through the
   * sink if it takes it and is yielded otherwise: while this generator
   * runs, everything it yielded before has been written (the writer asks
   * for the next message only after writing the last), so an offered frame
   * cannot overtake one, and a catch-up of thousands of entries is a loop
   * of writes until the client's window fills; the frame the sink refuses
   * then waits for the client like any yielded one.
   */
  async *#catchUp(): AsyncGenerator<WatchJobsResponse, void, undefined> {
    for (;;) {
      if (this.#session.stopping) return;
      const step = this.deps.feed.next(this.#position!, this.#hint);
      switch (step.kind) {
        case 'caught-up':
          return;
        case 'entry':
          this.#position = step.position;
          this.#hint = step.index + 1;
          if (this.#admits(step.change)) {
            const frame = this.#changed(step.change, step.position);
            if (!this.sink?.offer(frame)) yield frame;
          }
          break;
        case 'behind': {
          const before = this.#position;
          const batch = await this.deps.feed.read(this.caller, before, { statuses: [...this.binding.filter.statuses], queue: this.binding.filter.queue }, this.signals.signal);
          for (const change of batch.changes) {
            this.#position = { transactionId: change.position!.transactionId, entryId: change.position!.entryId };
            const frame = this.#changed(change, this.#position);
            if (!this.sink?.offer(frame)) yield frame;
          }
          if (batch.position) this.#position = { transactionId: batch.position.transactionId, entryId: batch.position.entryId };
          // Nothing more is released yet (entries held back): the shared walk wakes this stream when they are.
          if (batch.changes.length === 0 && samePosition(before, this.#position)) return;
          break;
        }
      }
    }
  }

  /** Whether the caller may see `change` and its filter admits it. */
  #admits(change: JobChange): boolean {
    const { filter } = this.binding;
    return (
      (this.caller.admin || change.owner === this.caller.subject) &&
      (filter.statuses.length === 0 || filter.statuses.includes(change.status)) &&
      (filter.queue === '' || change.queue === filter.queue)
    );
  }

  /**
   * The frame of `change`, whose cursor resumes right after `position` (the
   * change's own). Subscribers of one caller and filter carry the same
   * cursor for it, so they send one frame object, encoded once for all of
   * them (`sharedFrame`), made again only once its cursor is older than
   * the codec gives a sealed cursor out again for (`reuseMs`): no seal, no
   * string built, per subscriber and change.
   */
  #changed(change: JobChange, position: FeedCursorPosition): WatchJobsResponse {
    this.#session.sent();
    let byBinding = changedFrames.get(change);
    if (!byBinding) changedFrames.set(change, (byBinding = new Map()));
    const now = Date.now();
    const known = byBinding.get(this.#bindingKey);
    if (known && now - known.madeAt < this.deps.cursors.reuseMs) return known.response;
    const response = sharedFrame(
      create(WatchJobsResponseSchema, {
        cursor: this.deps.cursors.seal(position, this.binding),
        frame: { case: 'jobChanged', value: { jobId: change.jobId, revision: change.revision, status: change.status, lifecycle: change.lifecycle } },
      }),
    );
    if (!known && byBinding.size >= CHANGED_FRAMES_PER_ENTRY) byBinding.clear();
    byBinding.set(this.#bindingKey, { response, madeAt: now });
    return response;
  }

  /** A frame carrying the cursor that resumes right after the current position. */
  #sent(frame: MessageInitShape<typeof WatchJobsResponseSchema>['frame']): WatchJobsResponse {
    this.#session.sent();
    const cursor = this.#position ? this.deps.cursors.seal(this.#position, this.binding) : '';
    return create(WatchJobsResponseSchema, { cursor, frame });
  }
}

/**
 * Frames of feed entries by entry and binding (caller and filter; see
 * `bindingKeyOf`), kept as long as the entry is, for at most
 * {@link CHANGED_FRAMES_PER_ENTRY} bindings each.
 */
const changedFrames = new WeakMap<JobChange, Map<string, { readonly response: WatchJobsResponse; readonly madeAt: number }>>();

/** Distinct bindings whose frame one entry keeps (subscribers with more distinct callers and filters make their own). */
const CHANGED_FRAMES_PER_ENTRY = 8;

/** One string per caller and filter, the key of the frames they share. */
function bindingKeyOf(binding: FeedCursorBinding): string {
  return JSON.stringify([binding.subject, binding.filter.statuses, binding.filter.queue]);
}

function samePosition(a: FeedCursorPosition | undefined, b: FeedCursorPosition | undefined): boolean {
  return a?.transactionId === b?.transactionId && a?.entryId === b?.entryId;
}

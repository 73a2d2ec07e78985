import { create, type MessageInitShape } from '@bufbuild/protobuf';
import type { Principal } from '@docket/auth';
import {
  ResyncReason,
  WatchJobsResponseSchema,
  type WatchJobsRequest,
  type WatchJobsResponse,
} from '@docket/proto/docket/events/v1/event_service_pb.js';
import type { Caller, ReadJobChangesResponse, WatchChangesResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { FeedCursorBinding, FeedCursorPosition } from '@docket/service-kit';
import { callerOf } from '@docket/service-kit';
import type { EventDependencies, StreamSignals } from './event-dependencies.js';
import { parseFeedFilter } from './feed-filter.js';
import { STATE_CALL_TIMEOUT_MS, retryTransient } from './transient-failure.js';
import { SubscriberSession } from './subscriber-session.js';
import { UpstreamLink } from './upstream-link.js';

/** Feed entries examined per ReadJobChanges call. */
const FEED_BATCH = 256;

/**
 * How soon to look again while an older, still-running transaction holds
 * entries back. Its commit also produces a tick, but the transaction
 * holding the horizon need not be a job change at all.
 */
const HELD_BACK_RECHECK_MS = 200;

/**
 * WatchJobs: the global change feed (SPEC section 6) for the caller and a
 * filter, one `job_changed` frame per visible change in the feed's total
 * order, each carrying the cursor that resumes right after it.
 *
 * The order and the no-skip guarantee come from the state service:
 * entries are ordered by (transaction id, entry id) and released only
 * below the oldest running transaction, so nothing can later appear
 * behind a position this stream has passed. This stream only walks that
 * order after its cursor, one batch (one read) at a time, woken by a
 * WatchChanges tick (coalesced into one bit), by a 200 ms re-check while
 * entries are held back, or by its heartbeat.
 *
 * An absent, invalid, expired or foreign cursor is not an error: the first
 * frame is `resync_required` with a cursor at the current head, and the
 * stream continues from there. A broken WatchChanges stream (state
 * restart) is reopened in the background while heartbeats continue, and
 * the feed re-read after the stream's position once it is back.
 */
export async function* watchJobs(
  deps: EventDependencies,
  principal: Principal,
  request: WatchJobsRequest,
  signals: StreamSignals,
): AsyncGenerator<WatchJobsResponse, void, undefined> {
  const filter = parseFeedFilter(request.filter);
  const feed = new ChangeFeedSubscription(deps, callerOf(principal), { subject: principal.subject, filter }, signals);
  deps.gauge.opened('change_feeds');
  try {
    yield* feed.run(request.cursor);
  } finally {
    await feed.close();
    deps.gauge.closed('change_feeds');
  }
}

/** One subscriber's walk along the change feed. */
class ChangeFeedSubscription {
  #position: FeedCursorPosition | undefined;
  readonly #session: SubscriberSession;
  readonly #link: UpstreamLink<WatchChangesResponse>;

  constructor(
    private readonly deps: EventDependencies,
    private readonly caller: Caller,
    private readonly binding: FeedCursorBinding,
    private readonly signals: StreamSignals,
  ) {
    this.#session = new SubscriberSession(signals, deps.heartbeatMs);
    this.#link = new UpstreamLink({
      open: (signal) => deps.state.watchChanges({}, { signal }),
      onFrame: () => this.#session.wake.ring(),
      onChange: () => this.#session.wake.ring(),
      subscriber: signals.signal,
      gauge: deps.gauge,
    });
  }

  async *run(cursor: string): AsyncGenerator<WatchJobsResponse, void, undefined> {
    await this.#link.attach();
    const opened = this.deps.cursors.open(cursor, this.binding);
    if (opened.ok) {
      this.#position = opened.position;
    } else {
      this.#position = (await this.#read(undefined, 1)).position;
      yield this.#sent({ case: 'resyncRequired', value: { reason: ResyncReason[opened.refusal] } });
    }
    let readNeeded = true;
    let heldBack = false;
    for (;;) {
      if (readNeeded) {
        readNeeded = false;
        heldBack = yield* this.#catchUp();
      }
      switch (await this.#session.next(heldBack ? HELD_BACK_RECHECK_MS : undefined)) {
        case 'rung':
          readNeeded = this.#link.attached();
          break;
        case 'heartbeat':
          yield this.#sent({ case: 'heartbeat', value: {} });
          readNeeded = heldBack && this.#link.attached();
          break;
        case 'recheck':
          readNeeded = heldBack && this.#link.attached();
          break;
        case 'drain':
          yield this.#sent({ case: 'heartbeat', value: {} });
          return;
        case 'cancelled':
          return;
      }
    }
  }

  /** Releases the WatchChanges stream, any reattach in progress and every listener. */
  async close(): Promise<void> {
    this.#session.close();
    await this.#link.close();
  }

  /**
   * Sends every visible change after the position, batch by batch, until a
   * read neither returns a change nor moves the position; returns whether
   * entries are held back behind a running transaction.
   */
  async *#catchUp(): AsyncGenerator<WatchJobsResponse, boolean, undefined> {
    for (;;) {
      if (this.#session.stopping) return false;
      const before = this.#position;
      const batch = await this.#read(before, FEED_BATCH);
      for (const change of batch.changes) {
        this.#position = change.position;
        yield this.#sent({
          case: 'jobChanged',
          value: { jobId: change.jobId, revision: change.revision, status: change.status, lifecycle: change.lifecycle },
        });
      }
      this.#position = batch.position ?? this.#position;
      if (batch.changes.length === 0 && samePosition(before, this.#position)) return batch.heldBack;
    }
  }

  #read(after: FeedCursorPosition | undefined, limit: number): Promise<ReadJobChangesResponse> {
    const filter = { statuses: [...this.binding.filter.statuses], queue: this.binding.filter.queue };
    return retryTransient(
      () =>
        this.deps.state.readJobChanges(
          {
            caller: this.caller,
            after: after ? { transactionId: after.transactionId, entryId: after.entryId } : undefined,
            filter,
            limit,
          },
          { signal: this.signals.signal, timeoutMs: STATE_CALL_TIMEOUT_MS },
        ),
      this.signals.signal,
    );
  }

  /** A frame carrying the cursor that resumes right after the current position. */
  #sent(frame: MessageInitShape<typeof WatchJobsResponseSchema>['frame']): WatchJobsResponse {
    this.#session.sent();
    const cursor = this.#position ? this.deps.cursors.seal(this.#position, this.binding) : '';
    return create(WatchJobsResponseSchema, { cursor, frame });
  }
}

function samePosition(a: FeedCursorPosition | undefined, b: FeedCursorPosition | undefined): boolean {
  return a?.transactionId === b?.transactionId && a?.entryId === b?.entryId;
}

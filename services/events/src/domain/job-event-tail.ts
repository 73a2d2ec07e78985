import { create, type MessageInitShape } from '@bufbuild/protobuf';
import type { Principal } from '@docket/auth';
import { callWithRetry } from '@docket/client-kit';
import { DocketError } from '@docket/contracts';
import type { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { Progress } from '@docket/proto/docket/common/v1/progress_pb.js';
import {
  StreamJobEventsResponseSchema,
  type StreamJobEventsRequest,
  type StreamJobEventsResponse,
} from '@docket/proto/docket/events/v1/event_service_pb.js';
import type { Caller } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { callerOf, sharedFrame } from '@docket/service-kit';
import type { EventDependencies, StreamSignals } from './event-dependencies.js';
import { parseJobPosition } from './job-position.js';
import type { JournalPage } from './journal-page.js';
import { EVENTS_PER_READ, READS_AHEAD } from './shared-journal-reads.js';
import { stateRetry } from './state-retry.js';
import { isTerminalStatus } from './terminal-status.js';
import { SubscriberSession } from './subscriber-session.js';

/**
 * StreamJobEvents: a job's journal after `after_sequence`, backlog first,
 * then live, ending with `end` once the job is terminal and every event up
 * to its latest sequence has been sent.
 *
 * Order of operations, which is what makes it gap-free: the tail registers
 * with the process's {@link JobSignalHub} and waits until its one upstream
 * is live; only then is the journal read after the cursor, page by page
 * (the first read as the subscriber, which proves the job visible to it:
 * NOT_FOUND otherwise, before any frame is sent). Any commit after that
 * reaches the hub as news of the job, and news beyond the cursor leads to
 * one more read after the last sequence sent, so no commit can fall
 * between the backlog and the live tail. Events are sent only by reading
 * the journal after the subscriber's own cursor, never from a signal, so
 * none is sent twice or out of order. Tails of one job at one cursor share
 * each read ({@link SharedJournalReads}) and the frame made of it: on a
 * binary gRPC stream that frame is the events as the state service encoded
 * them, put together once per page, never decoded here. A progress report
 * is sent from the news itself, coalesced to the latest, without a read.
 *
 * If the upstream breaks or goes silent (a state restart, a stopped state
 * process, a half-open connection), the hub reopens it and tells every
 * tail, which re-reads after its last sent sequence once it is back: the
 * subscriber misses nothing. Meanwhile the tail sends no heartbeats, since
 * it could not honestly claim to be live; if the upstream stays away longer
 * than the retry budget (30 s), the stream fails UNAVAILABLE and the client
 * resumes with its last sequence.
 *
 * Memory per subscriber is bounded whatever the commit rate or the client's
 * speed: one read being sent and the next in flight (each at most
 * {@link EVENTS_PER_READ} events, reads shared), one "read again" bit and
 * the latest progress report. A subscriber that stops reading holds nothing more;
 * when it reads again it is served from the journal after its own cursor.
 */
export async function* streamJobEvents(
  deps: EventDependencies,
  principal: Principal,
  request: StreamJobEventsRequest,
  signals: StreamSignals,
  encodedFrames: boolean,
): AsyncGenerator<StreamJobEventsResponse, void, undefined> {
  const position = parseJobPosition(request.jobId, request.afterSequence);
  const tail = new JobEventTail(deps, callerOf(principal), position.jobId, position.afterSequence, signals, encodedFrames);
  deps.gauge.opened('job_event_streams');
  try {
    yield* tail.run();
  } finally {
    tail.close();
    deps.gauge.closed('job_event_streams');
  }
}

/** What a catch-up read learned about the job's head. */
interface JournalHead {
  readonly latestSequence: bigint;
  readonly status: JobStatus;
}

/** One subscriber's tail of one job's journal. */
class JobEventTail {
  /** The last sequence sent (or the starting cursor). */
  #cursor: bigint;
  /** Set by news beyond the cursor and by gaps: read after the cursor once the upstream is live. */
  #readNeeded = true;
  /** Whether a read as this subscriber has proven the job visible to it (later reads are shared). */
  #proven = false;
  /** The latest progress report not yet sent; older ones are superseded. */
  #progress: Progress | undefined;
  readonly #session: SubscriberSession;
  readonly #unwatch: () => void;

  constructor(
    private readonly deps: EventDependencies,
    private readonly caller: Caller,
    private readonly jobId: string,
    afterSequence: bigint,
    private readonly signals: StreamSignals,
    /** Whether this stream writes encoded frames (`writesEncodedFrames`): pages are sent as the state service encoded them. */
    private readonly encodedFrames: boolean,
  ) {
    this.#cursor = afterSequence;
    this.#session = new SubscriberSession(signals, deps.heartbeatMs, deps.hub);
    this.#unwatch = deps.hub.watchJob(jobId, (news) => {
      if (news === 'gap' || news.latestSequence > this.#cursor) this.#readNeeded = true;
      if (news !== 'gap' && news.progress) this.#progress = news.progress;
      this.#session.wake.ring();
    });
  }

  async *run(): AsyncGenerator<StreamJobEventsResponse, void, undefined> {
    await this.#session.untilLive();
    for (;;) {
      if (this.#readNeeded && this.deps.hub.live) {
        this.#readNeeded = false;
        const head = yield* this.#catchUp();
        if (head && isTerminalStatus(head.status) && this.#cursor >= head.latestSequence) {
          yield this.#sent({ case: 'end', value: {} });
          return;
        }
      }
      const progress = this.#progress;
      if (progress) {
        this.#progress = undefined;
        this.#session.sent();
        yield shared(progressFrames, progress, () => ({ case: 'progress', value: progress }));
      }
      const turn = await this.#session.next();
      if (turn === 'cancelled') return;
      // A heartbeat; on drain a final one, then a clean close without `end`: the client resumes.
      if (turn !== 'rung') yield this.#sent({ case: 'heartbeat', value: {} });
      if (turn === 'drain') return;
    }
  }

  /** Releases the hub registration and every listener. */
  close(): void {
    this.#unwatch();
    this.#session.close();
  }

  /**
   * Reads and sends every event after the cursor, one read (up to
   * {@link EVENTS_PER_READ} events, sent as frames of at most 256) at a
   * time; returns the head the last read reported, or undefined when the
   * stream is stopping. While a read's frames are being sent, the next
   * {@link READS_AHEAD} reads are already under way: a read reports the
   * journal's latest sequence, and every read but the last answers exactly
   * {@link EVENTS_PER_READ} events, so where each next read starts is known
   * before the one before it arrives. The state service then always has the
   * next read to work on (its database round trip overlaps the previous
   * read's work), and a backlog streams at the pace of the slowest stage,
   * not of their sum. The second read ahead is one of the process's
   * (`SECOND_READS_AHEAD_MAX`), taken only while one is free and given back
   * when its turn comes or it is dropped. A read that does not start at the
   * cursor when its turn comes is dropped and read again from the cursor;
   * reads left behind by a stream that stops are dropped with their answers.
   */
  async *#catchUp(): AsyncGenerator<StreamJobEventsResponse, JournalHead | undefined, undefined> {
    const ahead: ReadAhead[] = [];
    const drop = (read: ReadAhead): void => {
      if (read.second) this.deps.reads.giveBackSecondReadAhead();
    };
    try {
      for (;;) {
        if (this.#session.stopping) return undefined;
        const read = ahead.shift();
        if (read) drop(read);
        const page = await (read?.after === this.#cursor ? read.page : this.#readAfter(this.#cursor));
        if (read && read.after !== this.#cursor) ahead.splice(0).forEach(drop);
        this.#proven = true;
        const last = page.lastSequence;
        if (last === undefined || last >= page.latestSequence) {
          yield* this.#frames(page);
          return { latestSequence: page.latestSequence, status: page.status };
        }
        let after = ahead.length > 0 ? ahead.at(-1)!.after + BigInt(EVENTS_PER_READ) : last;
        for (; ahead.length < READS_AHEAD && after < page.latestSequence; after += BigInt(EVENTS_PER_READ)) {
          const second = ahead.length > 0;
          if (second && !this.deps.reads.takeSecondReadAhead()) break;
          const next = { after, page: this.#readAfter(after), second };
          next.page.catch(() => undefined);
          ahead.push(next);
        }
        yield* this.#frames(page);
      }
    } finally {
      ahead.splice(0).forEach(drop);
    }
  }

  /** The frames of `page`, one by one, each checked to continue the cursor, which moves to its last event. */
  *#frames(page: JournalPage): Generator<StreamJobEventsResponse, void, undefined> {
    for (const frame of page.frames(this.encodedFrames)) {
      assertContinues(frame.sequences, this.#cursor);
      this.#cursor = frame.sequences.at(-1)!;
      this.#session.sent();
      yield frame.response;
    }
  }

  #readAfter(sequence: bigint): Promise<JournalPage> {
    return callWithRetry(() => this.#read(sequence), stateRetry(this.signals.signal));
  }

  #read(afterSequence: bigint): Promise<JournalPage> {
    return this.#proven
      ? this.deps.reads.read(this.caller, this.jobId, afterSequence, this.signals.signal)
      : this.deps.reads.readAs(this.caller, this.jobId, afterSequence, this.signals.signal);
  }

  #sent(frame: StreamJobEventsResponseFrame): StreamJobEventsResponse {
    this.#session.sent();
    return create(StreamJobEventsResponseSchema, { frame });
  }
}

/** A read a catching-up tail started before its turn; `second` when it holds one of the process's second reads ahead. */
interface ReadAhead {
  readonly after: bigint;
  readonly page: Promise<JournalPage>;
  readonly second: boolean;
}

type StreamJobEventsResponseFrame = MessageInitShape<typeof StreamJobEventsResponseSchema>['frame'];

/**
 * Progress frames by the report they carry. Tails of one job get the same
 * report from the hub, so they send one frame object, encoded once for all
 * of them (`sharedFrame`); each entry lives as long as its report.
 */
const progressFrames = new WeakMap<Progress, StreamJobEventsResponse>();

function shared<K extends object>(frames: WeakMap<K, StreamJobEventsResponse>, key: K, frame: () => StreamJobEventsResponseFrame): StreamJobEventsResponse {
  let response = frames.get(key);
  if (!response) {
    response = sharedFrame(create(StreamJobEventsResponseSchema, { frame: frame() }));
    frames.set(key, response);
  }
  return response;
}

/**
 * The last line of defence for "no gap, no duplicate": a page must start
 * right after the cursor and be contiguous. The state service verifies the
 * chain; this checks what is about to be sent.
 */
function assertContinues(sequences: readonly bigint[], cursor: bigint): void {
  sequences.forEach((sequence, index) => {
    if (sequence !== cursor + BigInt(index) + 1n) {
      throw new DocketError('JOURNAL_CORRUPT', 'the journal is not contiguous', {
        metadata: { sequence: String(cursor + BigInt(index) + 1n) },
      });
    }
  });
}

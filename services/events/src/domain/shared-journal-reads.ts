import { LIMITS } from '@docket/contracts';
import type { Caller } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { JournalPage, JournalPageReader } from './journal-page.js';
import { STATE_CALL_TIMEOUT_MS } from './state-retry.js';

/**
 * Pages of 256 events one read asks the state service for: a backlog then
 * costs an eighth of the round trips, and each page is still sent as a
 * frame of its own (`JournalPage.frames`). A read costs each service
 * about as much again whatever its size (a one-event ReadJobEvents took
 * the state service 1.9 ms of CPU), so eight pages replayed a backlog 11%
 * faster than four (`bench/replay-ab.mjs`, twice), the events service
 * spending a fifth less CPU per event; sixteen measured no better.
 */
export const PAGES_PER_READ = 8;

/** The most events one read answers. */
export const EVENTS_PER_READ = LIMITS.eventPageMax * PAGES_PER_READ;

/**
 * Reads a tail catching up on a backlog has under way while it sends the
 * one before them: enough that the state service always has the next one
 * to work on, few enough that a tail holds at most three reads' events.
 * The first is the tail's own; the second is one of the process's
 * {@link SECOND_READS_AHEAD_MAX}.
 */
export const READS_AHEAD = 2;

/**
 * Second reads ahead the tails of one process hold at most (each up to
 * 2,048 events, about 0.9 MB of a typical journal): however many tails
 * catch up at once, the extra depth costs the process a fixed amount of
 * memory; a tail that finds them all taken keeps one read ahead.
 */
export const SECOND_READS_AHEAD_MAX = 64;

/**
 * Journal pages read from the state service for the tails of this process,
 * shared: when a job changes, every subscriber of it wakes at once and asks
 * for the page after the same cursor, and one ReadJobEvents then serves
 * them all. A read in flight is joined by any tail asking for the same job
 * after the same sequence; it is forgotten once it settles, so nothing is
 * cached and memory holds only the pages being fetched.
 *
 * A shared read runs as the caller of the tail that started it. Only tails
 * that have already read the job as themselves share (the first read of a
 * subscriber proves the job visible to it: NOT_FOUND otherwise), and a job
 * visible to one caller has the same journal for every caller that sees it.
 * It runs under its own deadline, not under any one subscriber's
 * cancellation, so a subscriber leaving does not fail the others' read.
 */
export class SharedJournalReads {
  readonly #inFlight = new Map<string, Promise<JournalPage>>();
  #secondReadsAhead = 0;

  constructor(private readonly reader: JournalPageReader) {}

  /** The {@link EVENTS_PER_READ} events after `afterSequence`, read as `caller` alone, under the tail's own cancellation: the read that proves the job visible to it. */
  readAs(caller: Caller, jobId: string, afterSequence: bigint, signal: AbortSignal): Promise<JournalPage> {
    return this.reader({ caller, jobId, afterSequence, pageSize: LIMITS.eventPageMax, pageCount: PAGES_PER_READ }, { signal, timeoutMs: STATE_CALL_TIMEOUT_MS });
  }

  /** The {@link EVENTS_PER_READ} events after `afterSequence`, read once for every tail that asks meanwhile. */
  async read(caller: Caller, jobId: string, afterSequence: bigint, signal: AbortSignal): Promise<JournalPage> {
    const key = `${jobId}@${afterSequence}`;
    let page = this.#inFlight.get(key);
    if (!page) {
      page = this.reader({ caller, jobId, afterSequence, pageSize: LIMITS.eventPageMax, pageCount: PAGES_PER_READ }, { timeoutMs: STATE_CALL_TIMEOUT_MS });
      this.#inFlight.set(key, page);
      const forget = (): void => {
        if (this.#inFlight.get(key) === page) this.#inFlight.delete(key);
      };
      page.then(forget, forget);
    }
    return abandonOnAbort(page, signal);
  }

  /** Takes one of the process's {@link SECOND_READS_AHEAD_MAX} second reads ahead; false when all are held. */
  takeSecondReadAhead(): boolean {
    if (this.#secondReadsAhead >= SECOND_READS_AHEAD_MAX) return false;
    this.#secondReadsAhead += 1;
    return true;
  }

  /** Gives back a second read ahead taken with {@link takeSecondReadAhead}, once it is sent or dropped. */
  giveBackSecondReadAhead(): void {
    this.#secondReadsAhead -= 1;
  }

  /** Second reads ahead held now (for tests). */
  get secondReadsAhead(): number {
    return this.#secondReadsAhead;
  }

  /** Reads in flight (for tests). */
  get inFlight(): number {
    return this.#inFlight.size;
  }
}

/** `work`, or a rejection as soon as `signal` aborts (the work goes on for others). */
function abandonOnAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

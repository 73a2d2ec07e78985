import type { Kysely } from 'kysely';
import { notFound, type JobStatusName } from '@docket/contracts';
import { CoalescingSignal } from '@docket/service-kit';
import type { ChangeListenerHub, StoredProgress } from '../db/change-listener.js';
import { findVisibleJob, type Viewer } from '../db/queries/jobs.js';
import type { Database } from '../db/tables/index.js';

/** A job's head, as a watcher sees it. */
export interface JobHead {
  readonly latestSequence: bigint;
  readonly status: JobStatusName;
}

/** One WatchJob frame: a new head, or a progress report. */
export type JobSignal = { readonly head: JobHead } | { readonly progress: StoredProgress };

/** What a watcher has not taken yet: at most one head (or a re-read) and one progress. */
interface PendingSignals {
  readonly reread: boolean;
  readonly head: JobHead | undefined;
  readonly progress: StoredProgress | undefined;
}

/**
 * Yields the job's current head, then a head whenever a change of the job
 * commits and a progress frame whenever its current attempt reports
 * progress (through any state replica), until `signal` aborts. It
 * subscribes before reading the head, so no commit falls between the two;
 * signals are coalesced, so a slow consumer holds one pending head and one
 * pending progress at most. After the listener reconnects (announcements
 * may have been lost) it re-reads the head.
 */
export async function* watchJobSignals(
  db: Kysely<Database>,
  hub: ChangeListenerHub,
  viewer: Viewer,
  jobId: string,
  signal: AbortSignal,
): AsyncGenerator<JobSignal> {
  const mailbox = new CoalescingSignal<PendingSignals>((held, next) => ({
    reread: held.reread || next.reread,
    head: !held.head || (next.head && next.head.latestSequence >= held.head.latestSequence) ? (next.head ?? held.head) : held.head,
    progress: next.progress ?? held.progress,
  }));
  const unsubscribe = hub.watchJob(jobId, (announcement) => {
    if (!announcement) return mailbox.put({ reread: true, head: undefined, progress: undefined });
    const head = { latestSequence: announcement.latestSequence, status: announcement.status as JobStatusName };
    mailbox.put(announcement.progress ? { reread: false, head: undefined, progress: announcement.progress } : { reread: false, head, progress: undefined });
  });
  try {
    mailbox.put({ reread: true, head: undefined, progress: undefined });
    let delivered = -1n;
    for (;;) {
      const next = await mailbox.take(Number.POSITIVE_INFINITY, signal);
      if (next === 'aborted' || next === 'timeout') return;
      const head = next.reread ? await readHead(db, viewer, jobId) : next.head;
      if (head && head.latestSequence >= delivered) {
        delivered = head.latestSequence;
        yield { head };
      }
      if (next.progress) yield { progress: next.progress };
    }
  } finally {
    unsubscribe();
  }
}

async function readHead(db: Kysely<Database>, viewer: Viewer, jobId: string): Promise<JobHead> {
  const job = await findVisibleJob(db, viewer, jobId);
  if (!job) throw notFound('job');
  return { latestSequence: job.event_count, status: job.status };
}

/** What a tick says of one job: its head as of its latest change, and its latest progress if it reported any. */
export interface JobChangeSignal {
  readonly latestSequence: bigint;
  readonly status: JobStatusName;
  readonly progress: StoredProgress | undefined;
}

/** A "read again" tick, with the queues whose claimable jobs may have changed. */
export interface ChangeTick {
  readonly claimableQueues: ReadonlySet<string>;
  /** Not known which queues (nor which jobs): every reader should look again. */
  readonly anyQueue: boolean;
  /** With `includeJobs`: the jobs that changed since the previous tick, latest signal per job. */
  readonly jobs: ReadonlyMap<string, JobChangeSignal>;
}

/** Options of {@link watchChangeTicks}. */
export interface ChangeTickOptions {
  /** Name the jobs that changed in each tick. */
  readonly includeJobs: boolean;
  /** Send an empty tick after this long without one (the reader's liveness check). */
  readonly heartbeatMs: number | undefined;
}

/**
 * The most job signals a tick waiting for a slow reader holds; past it they
 * are dropped and the tick says `anyQueue` instead (everyone reads again),
 * so a reader that cannot keep up costs bounded memory.
 */
export const MAX_PENDING_JOB_SIGNALS = 10_000;

/** A tick being gathered for the reader; merged in place, it is the mailbox's alone. */
interface PendingTick {
  readonly claimableQueues: Set<string>;
  anyQueue: boolean;
  readonly jobs: Map<string, JobChangeSignal>;
}

/**
 * Yields once now (for any queue) and then whenever any job change commits,
 * coalesced, until `signal` aborts: the feed's "read again" ticks, naming
 * the queues in which a job became claimable or a running job ended and,
 * with `includeJobs`, the jobs that changed. With `heartbeatMs`, an empty
 * tick follows any silence that long.
 */
export async function* watchChangeTicks(hub: ChangeListenerHub, options: ChangeTickOptions, signal: AbortSignal): AsyncGenerator<ChangeTick> {
  const mailbox = new CoalescingSignal<PendingTick>(mergeTicks);
  const unsubscribe = hub.watchAll((announcement) => {
    if (!announcement) return mailbox.put(pendingTick(true));
    const tick = pendingTick(false);
    if (mayFreeClaims(announcement.status)) tick.claimableQueues.add(announcement.queue);
    if (options.includeJobs) {
      tick.jobs.set(announcement.jobId, {
        latestSequence: announcement.latestSequence,
        status: announcement.status as JobStatusName,
        progress: announcement.progress,
      });
    }
    mailbox.put(tick);
  });
  try {
    mailbox.put(pendingTick(true));
    for (;;) {
      const tick = await mailbox.take(options.heartbeatMs, signal);
      if (tick === 'aborted') return;
      yield tick === 'timeout' ? pendingTick(false) : tick;
    }
  } finally {
    unsubscribe();
  }
}

function pendingTick(anyQueue: boolean): PendingTick {
  return { claimableQueues: new Set(), anyQueue, jobs: new Map() };
}

/** Folds `next` into `held`: queues and jobs unite, a job keeps its latest head and progress. */
function mergeTicks(held: PendingTick, next: PendingTick): PendingTick {
  for (const queue of next.claimableQueues) held.claimableQueues.add(queue);
  held.anyQueue ||= next.anyQueue;
  for (const [jobId, signal] of next.jobs) {
    const earlier = held.jobs.get(jobId);
    held.jobs.set(jobId, {
      latestSequence: earlier && earlier.latestSequence > signal.latestSequence ? earlier.latestSequence : signal.latestSequence,
      status: signal.status,
      progress: signal.progress ?? earlier?.progress,
    });
  }
  if (held.anyQueue || held.jobs.size > MAX_PENDING_JOB_SIGNALS) {
    held.anyQueue = true;
    held.jobs.clear();
  }
  return held;
}

/**
 * Whether a job arriving in `status` may let a claimer of its queue take
 * something: it became QUEUED, or it left RUNNING (freeing capacity under a
 * queue's max_concurrency). RUNNING and CANCELLING hold capacity.
 */
function mayFreeClaims(status: string): boolean {
  return status !== 'RUNNING' && status !== 'CANCELLING';
}

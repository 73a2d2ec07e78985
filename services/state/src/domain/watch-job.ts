import type { Kysely } from 'kysely';
import { notFound, type JobStatusName } from '@docket/contracts';
import type { ChangeListenerHub, StoredProgress } from '../db/change-listener.js';
import { findVisibleJob, type Viewer } from '../db/queries/jobs.js';
import type { Database } from '../db/tables/index.js';
import { CoalescingMailbox } from './coalescing-mailbox.js';

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
  const mailbox = new CoalescingMailbox<PendingSignals>((held, next) => ({
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
      const next = await mailbox.take(signal);
      if (next === undefined) return;
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
  return { latestSequence: BigInt(job.event_count), status: job.status };
}

/** A "read again" tick, with the queues whose claimable jobs may have changed. */
export interface ChangeTick {
  readonly claimableQueues: ReadonlySet<string>;
  /** Not known which queues: every claimer should look again. */
  readonly anyQueue: boolean;
}

/**
 * Yields once now (for any queue) and then whenever any job change commits,
 * coalesced, until `signal` aborts: the feed's "read again" ticks, naming
 * the queues in which a job became claimable or a running job ended.
 */
export async function* watchChangeTicks(hub: ChangeListenerHub, signal: AbortSignal): AsyncGenerator<ChangeTick> {
  const mailbox = new CoalescingMailbox<ChangeTick>((held, next) => ({
    claimableQueues: new Set([...held.claimableQueues, ...next.claimableQueues]),
    anyQueue: held.anyQueue || next.anyQueue,
  }));
  const unsubscribe = hub.watchAll((announcement) => {
    if (!announcement) return mailbox.put({ claimableQueues: new Set(), anyQueue: true });
    mailbox.put({ claimableQueues: mayFreeClaims(announcement.status) ? new Set([announcement.queue]) : new Set(), anyQueue: false });
  });
  try {
    mailbox.put({ claimableQueues: new Set(), anyQueue: true });
    for (;;) {
      const tick = await mailbox.take(signal);
      if (tick === undefined) return;
      yield tick;
    }
  } finally {
    unsubscribe();
  }
}

/**
 * Whether a job arriving in `status` may let a claimer of its queue take
 * something: it became QUEUED, or it left RUNNING (freeing capacity under a
 * queue's max_concurrency). RUNNING and CANCELLING hold capacity.
 */
function mayFreeClaims(status: string): boolean {
  return status !== 'RUNNING' && status !== 'CANCELLING';
}

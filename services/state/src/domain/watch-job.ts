import type { Kysely } from 'kysely';
import { notFound, type JobStatusName } from '@docket/contracts';
import type { ChangeListenerHub } from '../db/change-listener.js';
import { findVisibleJob, type Viewer } from '../db/queries/jobs.js';
import type { Database } from '../db/tables/index.js';
import { CoalescingMailbox } from './coalescing-mailbox.js';

/** A job's head, as a watcher sees it. */
export interface JobHead {
  readonly latestSequence: bigint;
  readonly status: JobStatusName;
}

/**
 * Yields the job's current head, then a head whenever a change of the job
 * commits (through any state replica), until `signal` aborts. It subscribes
 * before reading the head, so no commit falls between the two; signals are
 * coalesced, so a slow consumer holds one pending head at most. After the
 * listener reconnects (announcements may have been lost) it re-reads.
 */
export async function* watchJobHeads(
  db: Kysely<Database>,
  hub: ChangeListenerHub,
  viewer: Viewer,
  jobId: string,
  signal: AbortSignal,
): AsyncGenerator<JobHead> {
  const mailbox = new CoalescingMailbox<JobHead | 'reread'>((held, next) => {
    if (held === 'reread' || next === 'reread') return 'reread';
    return next.latestSequence >= held.latestSequence ? next : held;
  });
  const unsubscribe = hub.watchJob(jobId, (announcement) =>
    mailbox.put(announcement ? { latestSequence: announcement.latestSequence, status: announcement.status as JobStatusName } : 'reread'),
  );
  try {
    mailbox.put('reread');
    let delivered = -1n;
    for (;;) {
      const next = await mailbox.take(signal);
      if (next === undefined) return;
      const head = next === 'reread' ? await readHead(db, viewer, jobId) : next;
      if (head.latestSequence < delivered) continue;
      delivered = head.latestSequence;
      yield head;
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

/**
 * Yields once now and then whenever any job change commits, coalesced,
 * until `signal` aborts: the feed's "read again" ticks.
 */
export async function* watchChangeTicks(hub: ChangeListenerHub, signal: AbortSignal): AsyncGenerator<void> {
  const mailbox = new CoalescingMailbox<true>();
  const unsubscribe = hub.watchAll(() => mailbox.put(true));
  try {
    mailbox.put(true);
    while ((await mailbox.take(signal)) !== undefined) yield;
  } finally {
    unsubscribe();
  }
}

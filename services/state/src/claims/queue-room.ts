import type { QueueRoom } from '../db/queries/claims.js';
import type { JobRow } from '../db/queries/jobs.js';

/*
 * What a queue's policy leaves a claim (a rate limit's tokens, a pause),
 * and when a claim that found none may look again.
 */

/** How often a claim waiting on a paused queue looks again: a resume takes effect for waiting claimers within this. */
const PAUSED_RECHECK_MS = 1_000;

/** The buckets of the rate-limited queues `jobs` were taken from, each less a token per job. */
export function spentBuckets(room: ReadonlyMap<string, QueueRoom>, jobs: readonly JobRow[]): Map<string, number> {
  const left = new Map<string, number>();
  for (const job of jobs) {
    const bucket = room.get(job.queue)?.bucket;
    if (bucket) left.set(job.queue, (left.get(job.queue) ?? bucket.tokens) - 1);
  }
  return left;
}

/**
 * When one of `queues` that its policy holds back may have room again by
 * time alone: a rate-limited queue when its bucket next holds a whole
 * token, a paused one after {@link PAUSED_RECHECK_MS}. (A full concurrency
 * limit frees up with an outcome, which is a change the claimer hears of.)
 */
export function nextRoomAt(room: ReadonlyMap<string, QueueRoom>, queues: readonly string[], now: Date): Date | undefined {
  let next: Date | undefined;
  for (const queue of queues) {
    const limits = room.get(queue);
    if (!limits) continue;
    if (limits.paused) next = earliest(next, new Date(now.getTime() + PAUSED_RECHECK_MS));
    else if (limits.bucket && limits.bucket.tokens < 1) {
      const { tokens, jobs, perMs } = limits.bucket;
      next = earliest(next, new Date(now.getTime() + Math.ceil(((1 - tokens) * perMs) / jobs)));
    }
  }
  return next;
}

/** The earlier of two times, either of which may be missing. */
export function earliest(a: Date | undefined, b: Date | undefined): Date | undefined {
  if (!a) return b;
  if (!b) return a;
  return a.getTime() <= b.getTime() ? a : b;
}

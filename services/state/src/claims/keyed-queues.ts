import type { KeyedCandidate } from '../db/queries/claims.js';
import type { JobRow } from '../db/queries/jobs.js';

/*
 * Keyed queues (a policy with `per_key_concurrency`): a claim rotates
 * across the keys so that no key starves another, and a batch of claims
 * shares each key's room.
 */

/**
 * Round robin across a keyed queue's members: the first job of every key,
 * then the second of every key, and so on; keys served longest ago (never,
 * first) go first in each round, then the key whose first job is the
 * most urgent. So a key with a thousand jobs queued takes one turn per
 * round like a key with one, and never starves it.
 */
export function rotateAcrossKeys(found: readonly KeyedCandidate[]): KeyedCandidate[] {
  const byMember = new Map<string, KeyedCandidate[]>();
  for (const job of found) byMember.set(job.member, [...(byMember.get(job.member) ?? []), job]);
  const members = [...byMember.values()].sort((a, b) => {
    const [x, y] = [a[0]!, b[0]!];
    const servedX = x.member_served_at?.getTime() ?? Number.NEGATIVE_INFINITY;
    const servedY = y.member_served_at?.getTime() ?? Number.NEGATIVE_INFINITY;
    if (servedX !== servedY) return servedX - servedY;
    if (x.priority !== y.priority) return y.priority - x.priority;
    return x.created_at.getTime() - y.created_at.getTime();
  });
  const rotated: KeyedCandidate[] = [];
  for (let round = 0; rotated.length < found.length; round += 1) {
    for (const jobs of members) if (jobs[round]) rotated.push(jobs[round]!);
  }
  return rotated;
}

/**
 * What one claim batch took per key of its keyed queues: a key's room
 * (its limit less its running attempts, read once per group) is shared by
 * every group of the batch, so candidates past it are left out.
 */
export class KeyPicks {
  readonly #picked = new Map<string, number>();
  readonly #memberOf = new Map<string, { readonly queue: string; readonly key: string }>();

  /** The candidates a key still has room for, counted as taken (the caller takes them in order, or not at all). */
  admit(queue: string, rotated: readonly KeyedCandidate[]): KeyedCandidate[] {
    return rotated.filter((job) => {
      const name = `${queue}\u0000${job.member}`;
      const picked = this.#picked.get(name) ?? 0;
      if (picked >= Number(job.member_room)) return false;
      this.#picked.set(name, picked + 1);
      this.#memberOf.set(job.id, { queue, key: job.member });
      return true;
    });
  }

  /** The keys the claimed `jobs` were candidates of, once each. */
  served(jobs: readonly JobRow[]): { queue: string; key: string }[] {
    const served = new Map<string, { queue: string; key: string }>();
    for (const job of jobs) {
      const member = this.#memberOf.get(job.id);
      if (member) served.set(`${member.queue}\u0000${member.key}`, member);
    }
    return [...served.values()];
  }
}

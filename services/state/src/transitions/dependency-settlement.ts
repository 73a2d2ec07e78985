import { isTerminal } from '@docket/contracts';
import type { SettledStatusName } from '../db/tables/index.js';
import { lockChildren, settleEdges, type LockedChild, type SettledEdge, type SettledParent } from '../db/queries/dependencies.js';
import { writeJobSet } from '../db/queries/job-write-sets.js';
import type { JobRow } from '../db/queries/jobs.js';
import type { StatementTarget } from '../db/prepared-statement.js';
import { planTransition, type JobTransition } from './transition-plan.js';
import { journalCorrupt } from '../journal/journal-verification.js';
import { JobWriteSet } from './job-write-set.js';

/** Children locked, decided and written per statement: bounded batches inside the parent's transaction. */
export const SETTLEMENT_BATCH = 1_000;

/**
 * What parents that ended (or a tombstone named at admission) do to their
 * children, inside the transaction that ends them (SPEC section 14): each
 * unsettled edge is settled once; a child whose last pending parent
 * settled becomes QUEUED (`job.dependencies_met`, every parent and how it
 * settled); a failing parent (anything but SUCCEEDED) cancels a CANCEL
 * child (`job.cancelled`, reason DEPENDENCY_FAILED), whose own children
 * are then settled the same way, down the graph; a RUN child counts it as
 * settled. A PAUSED child only counts (it resumes to WAITING or QUEUED by
 * what is left). Children are locked in id order and written
 * {@link SETTLEMENT_BATCH} at a time, whatever the fan-out: a parent with
 * 10,000 children costs its transaction about 30 statements. Returns every
 * child changed, as written.
 */
export async function settleChildren(target: StatementTarget, parents: readonly SettledParent[], now: Date): Promise<Map<string, JobRow>> {
  const changed = new Map<string, JobRow>();
  let frontier = parents;
  while (frontier.length > 0) {
    const edges = await settleEdges(target, frontier);
    const byChild = groupByChild(edges);
    const next: SettledParent[] = [];
    const children = [...byChild.keys()].sort();
    for (let start = 0; start < children.length; start += SETTLEMENT_BATCH) {
      const writes = new JobWriteSet();
      for (const child of await lockChildren(target, children.slice(start, start + SETTLEMENT_BATCH))) {
        const settlement = planSettlement(child, byChild.get(child.id) ?? []);
        if (settlement === undefined) continue;
        if ('counted' in settlement) {
          writes.update(settlement.counted);
          changed.set(child.id, settlement.counted);
          continue;
        }
        const planned = planTransition(withoutEdges(child), settlement, now);
        writes.transition(planned);
        changed.set(child.id, planned.job);
        if (planned.job.status === 'CANCELLED' && planned.job.child_count > 0) next.push({ jobId: child.id, status: 'CANCELLED' });
      }
      const written = await writeJobSet(target, writes, now);
      const [corrupt] = written.corruptJournals;
      if (corrupt !== undefined) throw journalCorrupt(corrupt, writes.expectedHeads.get(corrupt)?.sequence ?? 0n);
    }
    frontier = next;
  }
  return changed;
}

/**
 * Settles the children of every job among `jobs` that has ended and has
 * children (SPEC section 14), in the caller's transaction; no statement
 * at all when none has.
 */
export async function settleEndedParents(tx: StatementTarget, jobs: Iterable<JobRow>, now: Date): Promise<void> {
  const ended = [...jobs].filter(endedParent);
  if (ended.length > 0) await settleChildren(tx, ended.map((job) => ({ jobId: job.id, status: job.status as SettledStatusName })), now);
}

/** Whether any of `jobs` has ended with children to settle ({@link settleEndedParents} would run a statement). */
export function endsAParent(jobs: Iterable<JobRow>): boolean {
  for (const job of jobs) if (endedParent(job)) return true;
  return false;
}

function endedParent(job: JobRow): boolean {
  return job.child_count > 0 && isTerminal(job.status);
}

/**
 * What the edges settled now do to one locked child (pure): undefined when
 * nothing changes (it has ended, or was cancelled by its owner), a counter
 * change (`counted`), or its transition: cancelled by the first failing
 * edge when it is a CANCEL child, else released when no parent is left
 * pending and it is WAITING.
 */
export function planSettlement(child: LockedChild, settled: readonly SettledEdge[]): JobTransition | { readonly counted: JobRow } | undefined {
  if (isTerminal(child.status) || settled.length === 0) return undefined;
  const pending = Math.max(0, child.pending_parent_count - settled.length);
  const failing = settled.find((edge) => edge.settled_status !== 'SUCCEEDED');
  if (failing !== undefined && child.on_parent_failure === 'CANCEL') {
    return {
      toStatus: 'CANCELLED',
      events: [
        {
          type: 'job.cancelled',
          payload: { reason: 'DEPENDENCY_FAILED', parent_job_id: failing.parent_job_id, parent_status: failing.settled_status, from: child.status },
        },
      ],
      patch: { pending_parent_count: pending, not_before: null, pause_requested: false },
    };
  }
  if (pending === 0 && child.status === 'WAITING') {
    const now = new Map(settled.map((edge) => [edge.parent_job_id, edge.settled_status]));
    const parents = child.parent_edges.map((edge) => ({ job_id: edge.job_id, status: edge.status ?? now.get(edge.job_id) ?? null }));
    return { toStatus: 'QUEUED', events: [{ type: 'job.dependencies_met', payload: { parents } }], patch: { pending_parent_count: 0 } };
  }
  return { counted: { ...withoutEdges(child), pending_parent_count: pending } };
}

function withoutEdges(child: LockedChild): JobRow {
  const { parent_edges: _edges, ...row } = child;
  return row;
}

function groupByChild(edges: readonly SettledEdge[]): Map<string, SettledEdge[]> {
  const byChild = new Map<string, SettledEdge[]>();
  for (const edge of edges) {
    const settled = byChild.get(edge.child_job_id);
    if (settled) settled.push(edge);
    else byChild.set(edge.child_job_id, [edge]);
  }
  return byChild;
}

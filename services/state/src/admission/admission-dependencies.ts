import { DocketError, isTerminal, notFound, type ValidJobSpec } from '@docket/contracts';
import type { ParentRow, SettledParent } from '../db/queries/dependencies.js';
import type { SettledStatusName } from '../db/tables/index.js';

/** One parent -> child edge as admitted: settled already, or pending. */
export interface AdmittedEdge {
  readonly parent_job_id: string;
  readonly settled_status: SettledStatusName | null;
}

/** Where a new child starts, from its parents as locked at its admission. */
export interface DependencyStart {
  readonly status: 'WAITING' | 'QUEUED';
  readonly pendingParentCount: number;
  readonly edges: readonly AdmittedEdge[];
  /**
   * Parents that had already failed and must cancel this CANCEL child in
   * its admission transaction: their edges are admitted pending and
   * settled right after, by the same settlement every ending uses.
   */
  readonly failedParents: readonly SettledParent[];
}

/** How a parent has ended, if it has: its terminal status, or HARD_DELETED for a tombstone. */
export function endingOf(parent: ParentRow): SettledStatusName | undefined {
  if (parent.lifecycle === 'HARD_DELETING' || parent.lifecycle === 'HARD_DELETED') return 'HARD_DELETED';
  return isTerminal(parent.status) ? (parent.status as SettledStatusName) : undefined;
}

/**
 * A child's start (SPEC section 14, pure): a parent already SUCCEEDED is
 * settled, and so is a failed one for a RUN child; a failed parent of a
 * CANCEL child cancels it at once (see `failedParents`); the child waits
 * while any parent is pending. A parent that does not exist or belongs to
 * another subject is NOT_FOUND, as GetJob would answer.
 */
export function dependencyStart(spec: ValidJobSpec, subject: string, parents: ReadonlyMap<string, ParentRow>): DependencyStart | DocketError {
  const edges: AdmittedEdge[] = [];
  const failedParents: SettledParent[] = [];
  let pending = 0;
  for (const id of spec.dependsOn) {
    const parent = parents.get(id);
    if (parent === undefined || parent.owner !== subject) return notFound('parent job');
    const ending = endingOf(parent);
    if (ending === 'SUCCEEDED' || (ending !== undefined && spec.onParentFailure === 'RUN')) {
      edges.push({ parent_job_id: id, settled_status: ending });
      continue;
    }
    if (ending !== undefined) failedParents.push({ jobId: id, status: ending });
    edges.push({ parent_job_id: id, settled_status: null });
    pending += 1;
  }
  return { status: pending > 0 ? 'WAITING' : 'QUEUED', pendingParentCount: pending, edges, failedParents };
}

/** Whether `start` refused the admission. */
export function isRefused(start: DependencyStart | DocketError): start is DocketError {
  return start instanceof DocketError;
}

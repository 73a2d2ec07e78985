import { describe, expect, it } from 'vitest';
import type { LockedChild, SettledEdge } from '../db/queries/dependencies.js';
import { jobRow } from '../testing/job-row.js';
import { planSettlement } from './dependency-settlement.js';

const P1 = 'job_pppppppppppppppppppppppp01';
const P2 = 'job_pppppppppppppppppppppppp02';

function child(overrides: Partial<LockedChild> = {}): LockedChild {
  return {
    ...jobRow({ status: 'WAITING', attempt_count: 0, parent_ids: [P1, P2], pending_parent_count: 2 }),
    parent_edges: [
      { job_id: P1, status: null },
      { job_id: P2, status: null },
    ],
    ...overrides,
  };
}

const edge = (parent: string, status: SettledEdge['settled_status']): SettledEdge => ({ child_job_id: child().id, parent_job_id: parent, settled_status: status });

describe('planSettlement', () => {
  it('only counts a success while another parent is pending', () => {
    expect(planSettlement(child(), [edge(P1, 'SUCCEEDED')])).toMatchObject({ counted: { pending_parent_count: 1, status: 'WAITING' } });
  });

  it('releases a WAITING child when its last parent settles, naming every parent and how it settled', () => {
    const waiting = child({ pending_parent_count: 1, parent_edges: [{ job_id: P1, status: 'SUCCEEDED' }, { job_id: P2, status: 'SUCCEEDED' }] });
    expect(planSettlement(waiting, [edge(P2, 'SUCCEEDED')])).toEqual({
      toStatus: 'QUEUED',
      events: [{ type: 'job.dependencies_met', payload: { parents: [{ job_id: P1, status: 'SUCCEEDED' }, { job_id: P2, status: 'SUCCEEDED' }] } }],
      patch: { pending_parent_count: 0 },
    });
  });

  it('cancels a CANCEL child on a failing parent, and lets a RUN child count it as settled', () => {
    expect(planSettlement(child(), [edge(P1, 'INTERRUPTED')])).toMatchObject({
      toStatus: 'CANCELLED',
      events: [{ type: 'job.cancelled', payload: { reason: 'DEPENDENCY_FAILED', parent_job_id: P1, parent_status: 'INTERRUPTED', from: 'WAITING' } }],
    });
    expect(planSettlement(child({ on_parent_failure: 'RUN' }), [edge(P1, 'FAILED'), edge(P2, 'HARD_DELETED')])).toMatchObject({ toStatus: 'QUEUED' });
  });

  it('only counts for a PAUSED child (it resumes by what is left), and leaves an ended child alone', () => {
    expect(planSettlement(child({ status: 'PAUSED', pending_parent_count: 1 }), [edge(P2, 'SUCCEEDED')])).toMatchObject({ counted: { status: 'PAUSED', pending_parent_count: 0 } });
    expect(planSettlement(child({ status: 'PAUSED' }), [edge(P2, 'CANCELLED')])).toMatchObject({ toStatus: 'CANCELLED' });
    expect(planSettlement(child({ status: 'CANCELLED' }), [edge(P1, 'FAILED')])).toBeUndefined();
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isDocketError } from '@docket/contracts';
import type { SignalMove, SignalRow } from '../db/queries/signals.js';
import type { SignalStateName } from '../db/tables/index.js';
import { jobRow } from '../testing/job-row.js';
import type { JobRow } from '../db/queries/jobs.js';
import {
  planAcknowledgement,
  planAttemptSignalsEnd,
  planDelivery,
  planReconcile,
  planSignal,
  type InboxChange,
} from './signal-inbox.js';

/*
 * The inbox planners against a model: random sequences of sends,
 * deliveries, acknowledgements, attempt endings and reconciliations,
 * applied the way the writers apply them (the patch to the row, the moves
 * to the signal rows). Every move must find exactly the signals it names in
 * the state it expects, and the counters must keep the invariants the
 * `jobs_signal_counters` constraint enforces.
 */

type Step =
  | { readonly kind: 'send' }
  | { readonly kind: 'deliver' }
  | { readonly kind: 'ack'; readonly by: number }
  | { readonly kind: 'end' }
  | { readonly kind: 'reconcile'; readonly action: 'REDELIVER' | 'DISCARD' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.constant<Step>({ kind: 'send' }),
  fc.constant<Step>({ kind: 'deliver' }),
  fc.integer({ min: -2, max: 3 }).map<Step>((by) => ({ kind: 'ack', by })),
  fc.constant<Step>({ kind: 'end' }),
  fc.constantFrom<'REDELIVER' | 'DISCARD'>('REDELIVER', 'DISCARD').map<Step>((action) => ({ kind: 'reconcile', action })),
);

interface Model {
  job: JobRow;
  signals: SignalRow[];
}

function apply(model: Model, change: InboxChange): void {
  model.job = { ...model.job, ...change.patch } as JobRow;
  for (const move of change.moves) applyMove(model, move);
}

function applyMove(model: Model, move: SignalMove): void {
  const named = model.signals.filter((signal) => signal.sequence > move.after && signal.sequence <= move.through);
  expect(named).toHaveLength(Number(move.through - move.after));
  for (const signal of named) {
    expect(signal.state).toBe(move.from);
    signal.state = move.to;
    if (move.attempt_id) signal.attempt_id = move.attempt_id;
    if (move.redelivered) signal.redelivered = true;
  }
}

function checkInvariants({ job, signals }: Model): void {
  const count = job.signal_count;
  const done = job.signals_done_through;
  const delivered = job.signals_delivered_through;
  const unknown = BigInt(job.unknown_signals);
  expect(done <= delivered && delivered <= count).toBe(true);
  expect(done + unknown <= count).toBe(true);
  if (unknown > 0n) expect(delivered).toBe(done);
  const expected = (sequence: bigint): SignalStateName[] => {
    if (sequence <= done) return ['ACKNOWLEDGED', 'DISCARDED'];
    if (sequence <= done + unknown) return ['UNKNOWN'];
    if (sequence <= delivered) return ['DELIVERED'];
    return ['PENDING'];
  };
  expect(signals).toHaveLength(Number(count));
  for (const signal of signals) expect(expected(signal.sequence)).toContain(signal.state);
}

describe('the signal inbox', () => {
  it('keeps its counters and rows in step through any sequence of calls', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const model: Model = { job: jobRow({ current_attempt_id: 'att_model00000000' }), signals: [] };
        for (const next of steps) {
          try {
            switch (next.kind) {
              case 'send': {
                const planned = planSignal(model.job, 'n');
                apply(model, planned.change);
                model.signals.push({ job_id: model.job.id, sequence: planned.sequence, name: 'n', payload: {}, state: 'PENDING', received_at: new Date(0), attempt_id: null, redelivered: false });
                break;
              }
              case 'deliver': {
                const outstanding = model.signals.filter((signal) => signal.sequence > model.job.signals_done_through).map((signal) => ({ ...signal }));
                const delivery = planDelivery(model.job, 'att_model00000000', outstanding);
                apply(model, delivery.change);
                if (model.job.unknown_signals > 0) expect(delivery.signals).toEqual([]);
                for (const signal of delivery.signals) expect(signal.sequence).toBeLessThanOrEqual(model.job.signals_delivered_through);
                break;
              }
              case 'ack':
                apply(model, planAcknowledgement(model.job, model.job.signals_done_through + BigInt(next.by)));
                break;
              case 'end':
                apply(model, planAttemptSignalsEnd(model.job));
                break;
              case 'reconcile':
                apply(model, planReconcile(model.job, next.action));
                break;
            }
          } catch (error) {
            // Refusals (SIGNALS_UNRESOLVED, INVALID_FIELD) change nothing.
            if (!isDocketError(error)) throw error;
          }
          checkInvariants(model);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('refuses a new signal while any is UNKNOWN, and an acknowledgement beyond what was delivered', () => {
    const unknown = jobRow({ signal_count: 2n, unknown_signals: 2 });
    expect(() => planSignal(unknown, 'n')).toThrow(expect.objectContaining({ reason: 'SIGNALS_UNRESOLVED' }));
    const delivered = jobRow({ signal_count: 3n, signals_done_through: 1n, signals_delivered_through: 2n });
    expect(() => planAcknowledgement(delivered, 3n)).toThrow(expect.objectContaining({ reason: 'INVALID_FIELD' }));
    expect(planAcknowledgement(delivered, 1n).moves).toEqual([]);
  });
});

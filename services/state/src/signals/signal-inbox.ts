import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { DocketError, invalidField, isTerminal } from '@docket/contracts';
import { SignalSchema, SignalState, type Signal } from '@docket/proto/docket/common/v1/signal_pb.js';
import { SIGNALS_PER_DELIVERY, type SignalMove, type SignalRow } from '../db/queries/signals.js';
import type { JobPatch, JobRow } from '../db/queries/jobs.js';
import type { NewEvent } from '../journal/chain-events.js';

/**
 * A change of a job's inbox, as data: the job columns that move, the
 * journal events that tell it, and the signal rows that move.
 */
export interface InboxChange {
  readonly patch: JobPatch;
  readonly events: NewEvent[];
  readonly moves: SignalMove[];
}

/** The inbox counters of a job row (see migration 0004), all as bigint (`unknown_signals` is an integer column). */
function counters(job: JobRow) {
  return {
    count: job.signal_count,
    done: job.signals_done_through,
    delivered: job.signals_delivered_through,
    unknown: BigInt(job.unknown_signals),
  };
}

const NOTHING: InboxChange = { patch: {}, events: [], moves: [] };

function move(job: JobRow, after: bigint, through: bigint, from: SignalRow['state'], to: SignalRow['state'], attemptId: string | null = null, redelivered = false): SignalMove {
  return { job_id: job.id, after, through, from, to, attempt_id: attemptId, redelivered };
}

/**
 * SendSignal on a locked job: ILLEGAL_TRANSITION on a terminal job (it
 * takes no more input), and SIGNALS_UNRESOLVED while any signal is UNKNOWN. The signal gets the next per-job sequence and
 * `signal.received {sequence, name}` is journaled; the payload is stored
 * with the signal, not in the journal.
 */
export function planSignal(job: JobRow, name: string): { change: InboxChange; sequence: bigint } {
  const { count, unknown } = counters(job);
  if (isTerminal(job.status)) {
    throw new DocketError('ILLEGAL_TRANSITION', `a ${job.status} job takes no signals`, { metadata: { from: job.status } });
  }
  if (unknown > 0n) {
    throw new DocketError('SIGNALS_UNRESOLVED', 'signals delivered to a lost attempt are unresolved: call ReconcileSignals first', {
      metadata: { unresolved_signals: unknown.toString() },
    });
  }
  const sequence = count + 1n;
  return {
    sequence,
    change: { patch: { signal_count: sequence }, events: [{ type: 'signal.received', payload: { sequence: sequence.toString(), name } }], moves: [] },
  };
}

/**
 * Hands the job's outstanding signals to its current attempt: every
 * signal after the done prefix (at most {@link SIGNALS_PER_DELIVERY}),
 * those already delivered to it and the PENDING ones, which become
 * DELIVERED (`signal.delivered {from_sequence, to_sequence}` journaled).
 * While any signal is UNKNOWN nothing is delivered: later signals wait
 * until the owner has reconciled the unknown ones, so none overtakes them.
 * `outstanding` is what `readOutstandingSignals` read for the job.
 */
export function planDelivery(job: JobRow, attemptId: string, outstanding: readonly SignalRow[]): { change: InboxChange; signals: Signal[] } {
  const { count, done, delivered, unknown } = counters(job);
  if (unknown > 0n || count === done) return { change: NOTHING, signals: [] };
  const through = [...outstanding].filter((row) => row.sequence > done).slice(0, SIGNALS_PER_DELIVERY);
  const last = through.reduce((max, row) => (row.sequence > max ? row.sequence : max), done);
  const signals = through.map((row) => projectSignal({ ...row, state: 'DELIVERED', attempt_id: attemptId }));
  if (last <= delivered) return { change: NOTHING, signals };
  return {
    signals,
    change: {
      patch: { signals_delivered_through: last },
      events: [{ type: 'signal.delivered', payload: { from_sequence: (delivered + 1n).toString(), to_sequence: last.toString(), attempt_id: attemptId } }],
      moves: [move(job, delivered, last, 'PENDING', 'DELIVERED', attemptId)],
    },
  };
}

/**
 * AckSignals(up_to): the signals delivered to the current attempt up to
 * `upTo` become ACKNOWLEDGED (`signal.acknowledged {to_sequence}`); an
 * acknowledgement at or below the done prefix changes nothing; above the
 * last delivered signal it is INVALID_FIELD.
 */
export function planAcknowledgement(job: JobRow, upTo: bigint): InboxChange {
  const { done, delivered } = counters(job);
  if (upTo < 1n) throw invalidField('up_to_sequence', 'must be at least 1');
  if (upTo > delivered) throw invalidField('up_to_sequence', 'must not be above the last signal delivered to this attempt');
  if (upTo <= done) return NOTHING;
  return {
    patch: { signals_done_through: upTo },
    events: [{ type: 'signal.acknowledged', payload: { to_sequence: upTo.toString() } }],
    moves: [move(job, done, upTo, 'DELIVERED', 'ACKNOWLEDGED')],
  };
}

/**
 * When an attempt ends (any outcome, an approval request, or a loss), the
 * signals delivered to it and not acknowledged become UNKNOWN: the worker
 * may or may not have acted on them (`signal.unknown {from_sequence,
 * to_sequence, attempt_id}`). Nothing is dropped and nothing is repeated
 * until the owner decides.
 */
export function planAttemptSignalsEnd(job: JobRow): InboxChange {
  const { done, delivered } = counters(job);
  if (delivered === done) return NOTHING;
  return {
    patch: { signals_delivered_through: done, unknown_signals: Number(delivered - done) },
    events: [
      {
        type: 'signal.unknown',
        payload: { from_sequence: (done + 1n).toString(), to_sequence: delivered.toString(), attempt_id: job.current_attempt_id },
      },
    ],
    moves: [move(job, done, delivered, 'DELIVERED', 'UNKNOWN')],
  };
}

/** What the owner decides for UNKNOWN signals. */
export type ReconcileActionName = 'REDELIVER' | 'DISCARD';

/**
 * ReconcileSignals: REDELIVER makes the UNKNOWN signals PENDING again,
 * flagged `redelivered` (`signal.redelivered`), so the next claim or
 * renewal hands them out; DISCARD drops them for good (`signal.discarded`)
 * and they join the done prefix. With nothing UNKNOWN it changes nothing.
 */
export function planReconcile(job: JobRow, action: ReconcileActionName): InboxChange {
  const { done, unknown } = counters(job);
  if (unknown === 0n) return NOTHING;
  const through = done + unknown;
  const payload = { from_sequence: (done + 1n).toString(), to_sequence: through.toString() };
  if (action === 'REDELIVER') {
    return {
      patch: { unknown_signals: 0 },
      events: [{ type: 'signal.redelivered', payload }],
      moves: [move(job, done, through, 'UNKNOWN', 'PENDING', null, true)],
    };
  }
  return {
    patch: { unknown_signals: 0, signals_done_through: through, signals_delivered_through: through },
    events: [{ type: 'signal.discarded', payload }],
    moves: [move(job, done, through, 'UNKNOWN', 'DISCARDED')],
  };
}

/** INTERNAL: the inbox rows disagree with the job's counters (never expected; the transaction rolls back). */
export function inboxDisagrees(): DocketError {
  return new DocketError('INTERNAL', 'a job\u2019s signal inbox disagrees with its counters');
}

/** The public form of a stored signal. */
export function projectSignal(row: SignalRow): Signal {
  return create(SignalSchema, {
    jobId: row.job_id,
    sequence: row.sequence,
    name: row.name,
    payload: row.payload,
    state: SignalState[row.state],
    receivedAt: timestampFromDate(row.received_at),
    attemptId: row.attempt_id ?? '',
    redelivered: row.redelivered,
  });
}

import { CompiledQuery, type Selectable } from 'kysely';
import type pg from 'pg';
import type { Queryable } from '../database.js';
import { jsonParameter } from '../json-parameter.js';
import { PreparedStatement } from '../prepared-statement.js';
import type { JobSignalsTable, SignalStateName } from '../tables/signals.js';
import type { JobRow } from './jobs.js';

/** A stored signal. */
export type SignalRow = Selectable<JobSignalsTable>;

/**
 * One range change of a job's inbox: the signals with sequences in
 * (`after`, `through`] that are `from` become `to`; `attempt_id`, when set,
 * records the attempt they were delivered to, and `redelivered` flags them
 * as handed out again. Every signal change is one of these, because the
 * inbox is always a done prefix followed by one block per state (see
 * migration 0004).
 */
export interface SignalMove {
  readonly job_id: string;
  readonly after: bigint;
  readonly through: bigint;
  readonly from: SignalStateName;
  readonly to: SignalStateName;
  readonly attempt_id: string | null;
  readonly redelivered: boolean;
}

/**
 * $1: the moves as json. Returns how many signals moved, which the caller
 * compares with what the job's counters promise.
 */
const MOVE_SIGNALS_SQL = `with moved as (
     update job_signals s set state = m."to", attempt_id = coalesce(m.attempt_id, s.attempt_id), redelivered = s.redelivered or m.redelivered
     from json_to_recordset($1::json) as m(job_id text, after bigint, through bigint, "from" text, "to" text, attempt_id text, redelivered boolean)
     where s.job_id = m.job_id and s.sequence > m.after and s.sequence <= m.through and s.state = m."from"
     returning 1
   )
   select count(*)::int as moved from moved`;

const MOVE_SIGNALS = new PreparedStatement<{ moved: number }>('docket_move_signals', MOVE_SIGNALS_SQL);

/** How many signals `moves` should move, by the counters they were planned from. */
function expectedMoves(moves: readonly SignalMove[]): number {
  return moves.reduce((sum, move) => sum + Number(move.through - move.after), 0);
}

/** Applies `moves` on a batch's connection; false when some signal was not where its job's counters said. */
export async function moveSignals(client: pg.ClientBase, moves: readonly SignalMove[]): Promise<boolean> {
  if (moves.length === 0) return true;
  const [row] = await MOVE_SIGNALS.run(client, [jsonParameter(moves)]);
  return (row?.moved ?? 0) === expectedMoves(moves);
}

/** {@link moveSignals} in a kysely transaction. */
export async function moveSignalsIn(db: Queryable, moves: readonly SignalMove[]): Promise<boolean> {
  if (moves.length === 0) return true;
  const result = await db.executeQuery<{ moved: number }>(CompiledQuery.raw(MOVE_SIGNALS_SQL, [jsonParameter(moves)]));
  return (result.rows[0]?.moved ?? 0) === expectedMoves(moves);
}

/** The most signals an envelope or a renewal carries (proto contract). */
export const SIGNALS_PER_DELIVERY = 64;

const READ_OUTSTANDING = new PreparedStatement<SignalRow>(
  'docket_read_outstanding_signals',
  `select s.* from json_to_recordset($1::json) as j(id text, done bigint)
   cross join lateral (
     select * from job_signals where job_id = j.id and sequence > j.done order by sequence limit ${SIGNALS_PER_DELIVERY}
   ) s
   order by s.job_id, s.sequence`,
);

/** Whether a job has signals that are neither acknowledged nor discarded. */
export function hasOutstandingSignals(job: JobRow): boolean {
  return job.signal_count > job.signals_done_through;
}

/**
 * The first signals after each job's done prefix (at most
 * {@link SIGNALS_PER_DELIVERY} per job), for the jobs that have any, by
 * job id. One round trip, and none when no job has outstanding signals.
 */
export async function readOutstandingSignals(client: pg.ClientBase, jobs: Iterable<JobRow>): Promise<Map<string, SignalRow[]>> {
  const wanted = [...jobs].filter(hasOutstandingSignals).map((job) => ({ id: job.id, done: job.signals_done_through }));
  const byJob = new Map<string, SignalRow[]>();
  if (wanted.length === 0) return byJob;
  for (const row of await READ_OUTSTANDING.run(client, [jsonParameter(wanted)])) {
    const signal = { ...row, received_at: new Date(row.received_at) };
    byJob.set(signal.job_id, [...(byJob.get(signal.job_id) ?? []), signal]);
  }
  return byJob;
}

/** Stores an accepted signal (its job's row is locked and its counters moved in the same transaction). */
export async function insertSignal(db: Queryable, row: SignalRow): Promise<void> {
  await db
    .insertInto('job_signals')
    .values({ ...row, payload: JSON.stringify(row.payload) })
    .execute();
}

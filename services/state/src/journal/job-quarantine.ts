import type { Kysely, Transaction } from 'kysely';
import { GRPC_CODE, isDocketError } from '@docket/contracts';
import { recordQuarantine, type QuarantineEntry } from '../db/queries/quarantine.js';
import { sqlStateOf } from '../db/sqlstate.js';
import type { Database } from '../db/tables/index.js';

export type { QuarantineEntry } from '../db/queries/quarantine.js';

/** Told once per job newly quarantined (by this process), to log and count it. */
export type QuarantineReport = (entry: QuarantineEntry) => void;

/** What a per-job background step needs to isolate its jobs. */
export interface QuarantineDependencies {
  readonly db: Kysely<Database>;
  readonly reportQuarantine: QuarantineReport;
}

/** The codes of Docket refusals that are about the job's own rows, the same on every try. */
const JOB_BOUND_CODES: ReadonlySet<number> = new Set([
  GRPC_CODE.DATA_LOSS,
  GRPC_CODE.INTERNAL,
  GRPC_CODE.FAILED_PRECONDITION,
  GRPC_CODE.INVALID_ARGUMENT,
  GRPC_CODE.OUT_OF_RANGE,
]);

/**
 * JavaScript errors that a malformed stored value provokes in the code
 * reading it (JSON or a number that fails to parse, a date out of range).
 * Not TypeError: that is as likely a defect of ours, which would then
 * quarantine every job it meets instead of failing the step visibly.
 */
const DATA_SHAPE_ERRORS: ReadonlySet<string> = new Set(['SyntaxError', 'RangeError']);

/**
 * The class of a failure that says the job itself cannot be settled (so
 * retrying it would fail the same way for ever), or undefined for one that
 * says the system is in trouble (the database unreachable or restarting,
 * a deadlock, a serialization failure, a statement timeout, a pool
 * exhausted), which must fail the step as before so the loop backs off and
 * retries the same job later. Job-bound are: a Docket refusal with a code
 * decided by the job's rows (JOURNAL_CORRUPT, an illegal transition, an
 * inbox that disagrees with its counters, a limit its stored data breaks),
 * a data exception or integrity violation from Postgres (SQLSTATE classes
 * 22 and 23), and a parse or range error a malformed stored value provokes. The class
 * is the reason, the SQLSTATE or the error's name: never its message.
 */
export function quarantineCause(error: unknown): string | undefined {
  if (isDocketError(error)) return JOB_BOUND_CODES.has(error.grpcCode) ? error.reason : undefined;
  const state = sqlStateOf(error);
  if (state !== undefined) return state.startsWith('22') || state.startsWith('23') ? `SQLSTATE_${state}` : undefined;
  if (error instanceof Error && DATA_SHAPE_ERRORS.has(error.name)) return error.name;
  return undefined;
}

/**
 * Runs one job's step in its own transaction, isolated from the jobs
 * after it: `body` locks its job and names it with `lockedJob(id)` before
 * touching it. When the step fails for a reason of the job's own
 * ({@link quarantineCause}), its transaction rolls back whole (nothing of
 * the failed settlement commits, the job's rows stay as they were), the
 * job is quarantined in a transaction of its own, and this resolves
 * `{ quarantined: jobId }` so the caller moves on to the next job. Any
 * other failure, or one before a job was named, is rethrown.
 */
export async function isolatingJob<T>(
  deps: QuarantineDependencies,
  task: string,
  body: (tx: Transaction<Database>, lockedJob: (jobId: string) => void) => Promise<T>,
): Promise<{ readonly done: T } | { readonly quarantined: string }> {
  let jobId: string | undefined;
  try {
    return { done: await deps.db.transaction().execute((tx) => body(tx, (id) => (jobId = id))) };
  } catch (error) {
    const errorClass = quarantineCause(error);
    if (jobId === undefined || errorClass === undefined) throw error;
    await quarantineJob(deps, { jobId, task, errorClass });
    return { quarantined: jobId };
  }
}

/** Records a quarantine and reports it, unless the job was already quarantined. */
export async function quarantineJob(deps: QuarantineDependencies, entry: QuarantineEntry): Promise<void> {
  if (await recordQuarantine(deps.db, entry)) deps.reportQuarantine(entry);
}

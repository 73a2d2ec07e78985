import { toJson } from '@bufbuild/protobuf';
import type { Kysely, Transaction } from 'kysely';
import { GRPC_CODE, isDocketError, isJobStatusName, isTerminal, parseIdempotencyKey } from '@docket/contracts';
import { SubmitJobRequestSchema } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { validateJobSpecMessage, type Logger } from '@docket/service-kit';
import { statementNow, transactionNow } from '../db/queries/clock.js';
import { lockVisibleJob } from '../db/queries/jobs.js';
import { hasFiringEvent, jobStatusOf, lockDueSchedule, nextScheduleDue, updateSchedule, type ScheduleRow } from '../db/queries/schedules.js';
import type { Database, JsonObject } from '../db/tables/index.js';
import { applyTransition } from '../transitions/apply-transition.js';
import type { BatchedWrites } from '../batched-writes.js';
import type { MaintenanceStep } from '../maintenance/maintenance-step.js';
import { SCHEDULE_FIRING_OPERATION, firingDigest, firingKey, planFirings } from './schedule-firing.js';
import { templateOf, triggerOf } from './schedules.js';

/** What the schedule firer needs: the database and the admission path every SubmitJob takes. */
export interface ScheduleFiringDependencies {
  readonly db: Kysely<Database>;
  readonly writes: Pick<BatchedWrites, 'admissions'>;
  readonly logger: Logger;
}

/** The least time a firing's key binding is kept: SubmitJob's minimum (24 hours). */
const FIRING_BINDING_TTL_MS = 24 * 3_600_000;

/** The codes of a refusal that would refuse the same firing every time (a template the admission path no longer accepts). */
const PERMANENT_CODES: ReadonlySet<number> = new Set([GRPC_CODE.INVALID_ARGUMENT, GRPC_CODE.FAILED_PRECONDITION, GRPC_CODE.ALREADY_EXISTS]);

/**
 * One step of the schedule firer (MaintenanceTask FIRE_DUE_SCHEDULES), up
 * to `limit` schedules, each in a transaction of its own:
 *
 * 1. the next schedule with something due by the database clock is locked
 *    with SKIP LOCKED (another replica firing it is skipped, never waited
 *    for), and its ticks are decided by {@link planFirings} against the
 *    status of its previous firing's job;
 * 2. each tick to fire is admitted through the admission path
 *    (`writes.admissions`, the group commit every SubmitJob uses), with the
 *    key {@link firingKey} and the digest {@link firingDigest}: a second
 *    admission of the same tick, by any replica or after any crash, replays
 *    the first one's job instead of creating another;
 * 3. in the schedule's transaction, each admitted job's journal gets
 *    `schedule.fired {schedule_id, nominal_fire_time, ...}` and the schedule
 *    advances (next and last fire times, counters, held tick).
 *
 * A crash between 2 and 3 leaves the schedule where it was: the next step
 * decides the same ticks again and their admissions replay, so each tick
 * still has one job and one `schedule.fired` event. A schedule whose firing
 * is refused for good (a template the admission path no longer accepts) is
 * left unchanged, logged, and retried by later steps; the step goes on
 * with the other schedules. Resolves to the schedules that changed.
 */
export async function fireDueSchedules(deps: ScheduleFiringDependencies, limit: number): Promise<MaintenanceStep> {
  const taken: string[] = [];
  let handled = 0;
  for (let step = 0; step < limit; step += 1) {
    let changed: boolean | undefined;
    try {
      changed = await deps.db.transaction().execute(async (tx) => {
        const now = await transactionNow(tx);
        const row = await lockDueSchedule(tx, taken);
        if (!row) return undefined;
        taken.push(row.id);
        return fireSchedule(deps, tx, row, now);
      });
    } catch (error) {
      if (!(error instanceof FiringRefused)) throw error;
      deps.logger.warn('schedule firing refused; the schedule is retried later', { schedule_id: error.scheduleId, reason: error.reason });
      changed = false;
    }
    if (changed === undefined) break;
    if (changed) handled += 1;
  }
  return { handled, nextDueAt: await nextScheduleDue(deps.db) };
}

/** Decides and fires one locked schedule's due ticks; resolves to whether the schedule changed. */
async function fireSchedule(deps: ScheduleFiringDependencies, tx: Transaction<Database>, row: ScheduleRow, now: Date): Promise<boolean> {
  const previous = row.last_job_id === null ? undefined : await jobStatusOf(tx, row.last_job_id);
  const plan = planFirings(
    {
      trigger: triggerOf(row),
      overlap: row.overlap,
      catchUpWindowMs: Number(row.catch_up_window_ms),
      // A schedule whose next tick is not due yet was taken for its held tick.
      nextFireAt: row.next_fire_at ?? now,
      bufferedFireAt: row.buffered_fire_at ?? undefined,
      previousJobActive: previous !== undefined && isJobStatusName(previous) && !isTerminal(previous),
    },
    now,
  );
  const fired: { readonly nominal: Date; readonly jobId: string }[] = [];
  try {
    for (const nominal of plan.fire) {
      // The ticks this step found missed are told on the first job it fires.
      fired.push({ nominal, jobId: await admitFiring(deps, tx, row, nominal, fired.length === 0 ? plan.missed : 0) });
    }
  } catch (error) {
    // Rolls the schedule's transaction back, journal events of this step included.
    if (isDocketError(error) && PERMANENT_CODES.has(error.grpcCode)) throw new FiringRefused(row.id, error.reason);
    throw error;
  }
  const last = fired.at(-1);
  const changedAt = await statementNow(tx, now);
  await updateSchedule(tx, row.id, {
    next_fire_at: plan.nextFireAt,
    buffered_fire_at: plan.bufferedFireAt ?? null,
    ...(last ? { last_fire_at: last.nominal, last_job_id: last.jobId, last_fired_at: changedAt } : {}),
    fired_count: row.fired_count + BigInt(fired.length),
    missed_count: row.missed_count + BigInt(plan.missed),
    ...(plan.lastMissed ? { last_missed_fire_at: plan.lastMissed } : {}),
    overlap_skipped_count: row.overlap_skipped_count + BigInt(plan.overlapSkipped),
    revision: row.revision + 1n,
    updated_at: changedAt,
  });
  return true;
}

/**
 * Admits one tick's job through the admission path and journals
 * `schedule.fired` on it (unless the admission answered an existing job
 * holding the template's `unique_while_active` key, whose journal is not
 * this firing's). `missedBefore`: the ticks older than the catch-up window
 * that the step passed over just before this one. Resolves to the job's id.
 */
async function admitFiring(deps: ScheduleFiringDependencies, tx: Transaction<Database>, row: ScheduleRow, nominal: Date, missedBefore: number): Promise<string> {
  const template = templateOf(row);
  const outcome = await deps.writes.admissions.submit({
    subject: row.owner,
    operation: SCHEDULE_FIRING_OPERATION,
    key: parseIdempotencyKey(firingKey(row.id, nominal)),
    digest: firingDigest(row.owner, row.id, nominal, toJson(SubmitJobRequestSchema, template)),
    ttlMs: Math.max(FIRING_BINDING_TTL_MS, 2 * Number(row.catch_up_window_ms)),
    spec: validateJobSpecMessage(template),
  });
  if (outcome.deduplicated === true) return outcome.job.id;
  // A replay whose journal already has the firing: the schedule did not advance after it (never in normal
  // operation: the event and the advance commit together), so it is not journaled twice.
  if (outcome.replayed && (await hasFiringEvent(tx, outcome.job.id, row.id, nominal))) return outcome.job.id;
  const job = await lockVisibleJob(tx, { subject: row.owner, admin: false }, outcome.job.id);
  if (job && job.lifecycle === 'ACTIVE') {
    const payload: JsonObject = {
      schedule_id: row.id,
      nominal_fire_time: nominal.toISOString(),
      overlap: row.overlap,
      missed_before: missedBefore,
    };
    const at = await statementNow(tx, job.updated_at);
    await applyTransition(tx, job, { events: [{ type: 'schedule.fired', payload }] }, at);
  }
  return outcome.job.id;
}

/** A firing the admission path refused for good: the schedule's transaction rolls back and the step goes on. */
class FiringRefused extends Error {
  override readonly name = 'FiringRefused';
  constructor(
    readonly scheduleId: string,
    readonly reason: string,
  ) {
    super('the schedule firing was refused');
  }
}

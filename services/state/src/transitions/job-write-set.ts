import type { Insertable } from 'kysely';
import type { JobRow } from '../db/queries/jobs.js';
import type { AnnouncedChange } from '../db/queries/job-changes.js';
import type { AttemptStatusName, AttemptsTable, JobEventsTable, WorkerOperationsTable } from '../db/tables/index.js';
import type { PlannedTransition, StoredHead } from './transition-plan.js';
import type { SignalMove } from '../db/queries/signals.js';
import type { EffectRow } from '../effects/effect-lifecycle.js';

/**
 * Everything a batch of worker calls writes, gathered in memory while the
 * batch is decided under its row locks and then written by one statement
 * (`writeJobSet`): each job's final row, the journal rows, attempts begun
 * and ended, one feed entry per transition, the recorded operations and
 * the announcement, and the journal head each transition chained after,
 * which the statement checks against the stored journal. Items of a batch that touch the same job see each
 * other's effects through {@link current}, in batch order.
 */
export class JobWriteSet {
  readonly jobs = new Map<string, JobRow>();
  readonly events: Insertable<JobEventsTable>[] = [];
  readonly startedAttempts: Insertable<AttemptsTable>[] = [];
  readonly endedAttempts: { readonly id: string; readonly status: AttemptStatusName }[] = [];
  readonly changes: JobRow[] = [];
  readonly operations: WorkerOperationsTable[] = [];
  readonly announcements: AnnouncedChange[] = [];
  /** Per job, the head its first transition of the batch chained after (checked by the write). */
  readonly expectedHeads = new Map<string, StoredHead>();
  /** Range changes of the jobs' signal inboxes, in order. */
  readonly signalMoves: SignalMove[] = [];
  /** Effects created or advanced, latest version by id. */
  readonly effects = new Map<string, EffectRow>();

  /** The job as this batch has left it so far, or as locked. */
  current(locked: JobRow): JobRow {
    return this.jobs.get(locked.id) ?? locked;
  }

  /** A transition's rows: the new row, its events, a feed entry and an announcement. */
  transition(planned: PlannedTransition): void {
    if (!this.expectedHeads.has(planned.job.id)) this.expectedHeads.set(planned.job.id, planned.previousHead);
    this.jobs.set(planned.job.id, planned.job);
    this.events.push(...planned.eventRows);
    this.changes.push(planned.job);
    this.announcements.push(announced(planned.job));
  }

  /** The effect as this batch has left it, if it touched it. */
  effect(id: string): EffectRow | undefined {
    return this.effects.get(id);
  }

  /** The effect this batch created or advanced for (job, key), if any. */
  effectByKey(jobId: string, key: string): EffectRow | undefined {
    return [...this.effects.values()].find((effect) => effect.job_id === jobId && effect.idempotency_key === key);
  }

  /** A change of columns that is not a transition (lease renewal, progress): no event, no feed entry. */
  update(job: JobRow): void {
    this.jobs.set(job.id, job);
  }

  /** A progress report for live streams (not journaled). */
  announceProgress(job: JobRow, progress: { [key: string]: unknown }): void {
    this.announcements.push({ ...announced(job), progress });
  }

  get isEmpty(): boolean {
    return this.jobs.size === 0 && this.startedAttempts.length === 0 && this.endedAttempts.length === 0 && this.operations.length === 0;
  }
}

function announced(job: JobRow): AnnouncedChange {
  return { jobId: job.id, latestSequence: job.event_count, status: job.status, queue: job.queue };
}

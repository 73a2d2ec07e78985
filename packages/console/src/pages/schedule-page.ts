import type { Timestamp } from '@bufbuild/protobuf/wkt';
import { ScheduleOverlap, ScheduleState, type Schedule } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { el, replaceChildren } from '../dom.js';
import { formatAge, formatTime } from '../job-facts.js';
import { jobHref } from '../route.js';
import { showListingTable } from './listing-table.js';
import type { PageContext } from './page-context.js';
import { refusalView } from './refusal-view.js';
import { repeatWhileShown } from './reread.js';

/** How often the page reads the schedules again (their next and last ticks move by themselves). */
const REREAD_MS = 5_000;

/**
 * The schedules view (ListSchedules): every schedule of the caller with its
 * trigger, state, queue, next and last tick (and the job that tick
 * admitted), and its fired, missed and skipped counts, read again every
 * few seconds; Pause and Resume each send their own idempotency key.
 * Creating a schedule is the CLI's (`docket schedule create`).
 */
export function showSchedules(context: PageContext): void {
  const { client, main, signal } = context;
  const table = showListingTable(main, {
    id: 'schedule',
    title: 'Schedules',
    help: 'Each tick admits one ordinary job (its idempotency key comes from the schedule and the tick). Create schedules with docket schedule create.',
    columns: ['Schedule', 'State', 'Trigger', 'Queue', 'Overlap', 'Next tick', 'Last tick', 'Fired / missed / skipped', 'Action'],
  });
  const { problems } = table;

  const act = async (schedule: Schedule): Promise<void> => {
    const pausing = schedule.state !== ScheduleState.PAUSED;
    try {
      if (pausing) await client.pauseSchedule(schedule.scheduleId, { signal });
      else await client.resumeSchedule(schedule.scheduleId, { signal });
      replaceChildren(problems);
    } catch (error) {
      if (!signal.aborted) replaceChildren(problems, refusalView(pausing ? 'Pause' : 'Resume', error));
    }
    await read();
  };

  async function read(): Promise<void> {
    const schedules: Schedule[] = [];
    try {
      for await (const schedule of client.listSchedules({ signal, pageSize: 200 })) schedules.push(schedule);
    } catch (error) {
      if (!signal.aborted) replaceChildren(problems, refusalView('Listing', error));
      return;
    }
    table.show(
      schedules.map((schedule) => scheduleRow(schedule, () => void act(schedule))),
      'schedule',
      'No schedules yet.',
    );
  }

  repeatWhileShown(signal, REREAD_MS, read);
}

function scheduleRow(schedule: Schedule, act: () => void): HTMLTableRowElement {
  const paused = schedule.state === ScheduleState.PAUSED;
  const trigger =
    schedule.trigger.case === 'cron'
      ? `cron ${schedule.trigger.value} (${schedule.timeZone || 'UTC'})`
      : schedule.trigger.case === 'interval'
        ? `every ${formatAge(Number(schedule.trigger.value.seconds) * 1000)}`
        : '-';
  const last = schedule.lastFireTime
    ? el('span', {}, tickTime(schedule.lastFireTime), ' ', schedule.lastJobId ? el('a', { href: jobHref(schedule.lastJobId) }, schedule.lastJobId) : '')
    : '-';
  return el(
    'tr',
    { 'data-schedule': schedule.scheduleId },
    el('th', { scope: 'row' }, el('code', {}, schedule.scheduleId)),
    el('td', { 'data-fact': 'state' }, ScheduleState[schedule.state] ?? 'UNKNOWN'),
    el('td', {}, trigger),
    el('td', {}, schedule.jobTemplate?.queue ?? '-'),
    el('td', {}, ScheduleOverlap[schedule.overlap] ?? '-'),
    el('td', { 'data-fact': 'next' }, paused ? '- (paused)' : tickTime(schedule.nextFireTime)),
    el('td', { 'data-fact': 'last' }, last),
    el('td', { 'data-fact': 'counts' }, `${schedule.firedCount} / ${schedule.missedCount} / ${schedule.overlapSkippedCount}`),
    el('td', {}, el('button', { type: 'button', 'data-action': paused ? 'resume' : 'pause', onclick: act }, paused ? 'Resume' : 'Pause')),
  );
}

function tickTime(time: Timestamp | undefined): string {
  return time ? formatTime(time) : '-';
}

import { create, type JsonObject } from '@bufbuild/protobuf';
import { timestampDate, type Duration, type Timestamp } from '@bufbuild/protobuf/wkt';
import {
  CreateScheduleResponseSchema,
  DeleteScheduleResponseSchema,
  GetScheduleResponseSchema,
  ListSchedulesResponseSchema,
  PauseScheduleResponseSchema,
  ResumeScheduleResponseSchema,
  ScheduleOverlap,
  ScheduleSchema,
  ScheduleState,
  type Schedule,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { UsageError, refusePositionals, soleArgument, type CliContext, type Command } from './command.js';
import { protoJsonLine } from './job-client.js';
import { parseJsonObjectFlag } from './json-object-flag.js';
import {
  OWNER_OPTIONS_HELP,
  admissionCommand,
  admissionOptionsHelp,
  parseAdmissionArguments,
  parseOwnerArguments,
  replayNote,
  reportingFailures,
  requestKey,
  type AdmissionClient,
  type AdmissionOptions,
  type OwnerOptions,
} from './owner-call.js';
import { formatRetentionAge, parseRetentionAge } from './retention-age.js';

/** The `docket schedule` actions. */
export const SCHEDULE_ACTIONS = ['create', 'get', 'list', 'pause', 'resume', 'delete'] as const;

/** One `docket schedule` action. */
export type ScheduleAction = (typeof SCHEDULE_ACTIONS)[number];

/** Parsed `docket schedule ...` arguments. */
export type ScheduleArguments =
  | { readonly action: 'create'; readonly schedule: Schedule; readonly json: boolean; readonly owner: OwnerOptions }
  | { readonly action: 'get'; readonly scheduleId: string; readonly json: boolean; readonly call: AdmissionOptions }
  | { readonly action: 'list'; readonly pageSize: number; readonly pageToken: string; readonly json: boolean; readonly call: AdmissionOptions }
  | { readonly action: 'pause' | 'resume' | 'delete'; readonly scheduleId: string; readonly json: boolean; readonly owner: OwnerOptions };

const OVERLAPS: Readonly<Record<string, ScheduleOverlap>> = {
  skip: ScheduleOverlap.SKIP,
  'buffer-one': ScheduleOverlap.BUFFER_ONE,
  allow: ScheduleOverlap.ALLOW,
};

/**
 * Reads `docket schedule <action> ...`; UsageError for anything wrong.
 * What the service judges (the cron grammar, the time zone, the queue,
 * the bounds of the interval and window) is left to it.
 */
export function parseScheduleArguments(args: readonly string[]): ScheduleArguments {
  const [action, ...rest] = args;
  if (action === undefined || !(SCHEDULE_ACTIONS as readonly string[]).includes(action)) {
    throw new UsageError(`an action is required: ${SCHEDULE_ACTIONS.join(', ')}`);
  }
  switch (action as ScheduleAction) {
    case 'create':
      return parseCreate(rest);
    case 'get': {
      const { positionals, values, call } = parseAdmissionArguments(rest, { json: { type: 'boolean' } });
      return { action: 'get', scheduleId: soleScheduleId(positionals), json: values['json'] === true, call };
    }
    case 'list': {
      const { positionals, values, call } = parseAdmissionArguments(rest, { json: { type: 'boolean' }, 'page-size': { type: 'string' }, 'page-token': { type: 'string' } });
      refusePositionals('list', positionals);
      const sizeText = values['page-size'] as string | undefined;
      const pageSize = sizeText === undefined ? 0 : /^\d{1,4}$/.test(sizeText) ? Number(sizeText) : Number.NaN;
      if (Number.isNaN(pageSize)) throw new UsageError('--page-size must be a whole number');
      return { action: 'list', pageSize, pageToken: (values['page-token'] as string | undefined) ?? '', json: values['json'] === true, call };
    }
    default: {
      const { positionals, values, owner } = parseOwnerArguments(rest, { json: { type: 'boolean' } });
      return { action: action as 'pause' | 'resume' | 'delete', scheduleId: soleScheduleId(positionals), json: values['json'] === true, owner };
    }
  }
}

function parseCreate(args: readonly string[]): ScheduleArguments {
  const { positionals, values, owner } = parseOwnerArguments(args, {
    cron: { type: 'string' },
    'time-zone': { type: 'string' },
    every: { type: 'string' },
    queue: { type: 'string' },
    input: { type: 'string' },
    label: { type: 'string' },
    priority: { type: 'string' },
    overlap: { type: 'string' },
    'catch-up-window': { type: 'string' },
    id: { type: 'string' },
    paused: { type: 'boolean' },
    json: { type: 'boolean' },
  });
  refusePositionals('create', positionals);
  const cron = values['cron'] as string | undefined;
  const every = values['every'] as string | undefined;
  if ((cron === undefined) === (every === undefined)) throw new UsageError('exactly one of --cron or --every is required');
  const timeZone = (values['time-zone'] as string | undefined) ?? '';
  if (every !== undefined && timeZone !== '') throw new UsageError('--time-zone applies to --cron only');
  const queue = values['queue'];
  if (typeof queue !== 'string' || queue === '') throw new UsageError('--queue is required');
  const overlapText = (values['overlap'] as string | undefined) ?? 'skip';
  const overlap = OVERLAPS[overlapText];
  if (overlap === undefined) throw new UsageError('--overlap must be skip, buffer-one or allow');
  const priorityText = values['priority'] as string | undefined;
  const priority = priorityText === undefined ? 0 : /^-?\d{1,10}$/.test(priorityText) ? Number(priorityText) : Number.NaN;
  if (!Number.isSafeInteger(priority) || priority < -(2 ** 31) || priority >= 2 ** 31) throw new UsageError('--priority must be a whole number (32-bit)');
  const windowText = values['catch-up-window'] as string | undefined;
  const input: JsonObject = parseJsonObjectFlag(values['input'] as string | undefined, '--input');
  const schedule = create(ScheduleSchema, {
    scheduleId: (values['id'] as string | undefined) ?? '',
    trigger: cron !== undefined ? { case: 'cron', value: cron } : { case: 'interval', value: { seconds: parseRetentionAge(every ?? '', '--every') } },
    timeZone,
    jobTemplate: { queue, input, label: (values['label'] as string | undefined) ?? '', priority },
    overlap,
    ...(windowText === undefined ? {} : { catchUpWindow: { seconds: parseRetentionAge(windowText, '--catch-up-window') } }),
    state: values['paused'] === true ? ScheduleState.PAUSED : ScheduleState.UNSPECIFIED,
  });
  return { action: 'create', schedule, json: values['json'] === true, owner };
}

function soleScheduleId(positionals: readonly string[]): string {
  return soleArgument(positionals, 'a schedule id is required', 'schedule');
}

/**
 * Runs one `docket schedule` action against the admission service and
 * prints the schedule (one summary line, or the response as proto3 JSON
 * with `--json`); resolves to the exit code.
 */
export async function runScheduleAction(client: AdmissionClient, parsed: ScheduleArguments, context: CliContext): Promise<number> {
  const command = `schedule ${parsed.action}`;
  const options = 'owner' in parsed ? parsed.owner : parsed.call;
  return reportingFailures(command, options, context, async () => {
    switch (parsed.action) {
      case 'create': {
        const response = await client.createSchedule({ idempotencyKey: requestKey(command, parsed.owner, context), schedule: parsed.schedule });
        context.out(parsed.json ? protoJsonLine(CreateScheduleResponseSchema, response) : `created ${formatSchedule(response.schedule)}${replayNote(response.replayed)}\n`);
        return 0;
      }
      case 'get': {
        const response = await client.getSchedule({ scheduleId: parsed.scheduleId });
        context.out(parsed.json ? protoJsonLine(GetScheduleResponseSchema, response) : `${formatSchedule(response.schedule)}\n`);
        return 0;
      }
      case 'list': {
        const response = await client.listSchedules({ pageSize: parsed.pageSize, pageToken: parsed.pageToken });
        if (parsed.json) {
          context.out(protoJsonLine(ListSchedulesResponseSchema, response));
          return 0;
        }
        for (const schedule of response.schedules) context.out(`${formatSchedule(schedule)}\n`);
        if (response.schedules.length === 0) context.out('no schedules\n');
        if (response.nextPageToken !== '') context.out(`more: docket schedule list --page-token ${response.nextPageToken}\n`);
        return 0;
      }
      case 'pause': {
        const response = await client.pauseSchedule({ idempotencyKey: requestKey(command, parsed.owner, context), scheduleId: parsed.scheduleId });
        context.out(parsed.json ? protoJsonLine(PauseScheduleResponseSchema, response) : `paused ${formatSchedule(response.schedule)}${replayNote(response.replayed)}\n`);
        return 0;
      }
      case 'resume': {
        const response = await client.resumeSchedule({ idempotencyKey: requestKey(command, parsed.owner, context), scheduleId: parsed.scheduleId });
        context.out(parsed.json ? protoJsonLine(ResumeScheduleResponseSchema, response) : `resumed ${formatSchedule(response.schedule)}${replayNote(response.replayed)}\n`);
        return 0;
      }
      case 'delete': {
        const response = await client.deleteSchedule({ idempotencyKey: requestKey(command, parsed.owner, context), scheduleId: parsed.scheduleId });
        context.out(
          parsed.json ? protoJsonLine(DeleteScheduleResponseSchema, response) : `deleted ${response.schedule?.scheduleId ?? parsed.scheduleId}${replayNote(response.replayed)}\n`,
        );
        return 0;
      }
    }
  });
}

/**
 * One line for a schedule, for example
 * `sch_... ACTIVE every 1m, queue reports, overlap SKIP, next 2026-12-01T12:01:00.000Z, last 2026-12-01T12:00:00.000Z -> job_..., fired 3, missed 0, skipped 0`.
 */
export function formatSchedule(schedule: Schedule | undefined): string {
  if (!schedule) return 'no schedule in the answer';
  const trigger =
    schedule.trigger.case === 'cron'
      ? `cron "${schedule.trigger.value}" in ${schedule.timeZone || 'UTC'}`
      : schedule.trigger.case === 'interval'
        ? `every ${formatSpan(schedule.trigger.value)}`
        : 'no trigger';
  const at = (time: Timestamp | undefined) => (time ? timestampDate(time).toISOString() : 'none');
  const last = schedule.lastFireTime ? `${at(schedule.lastFireTime)} -> ${schedule.lastJobId}` : 'none';
  const state = ScheduleState[schedule.state] ?? 'UNKNOWN';
  const overlap = ScheduleOverlap[schedule.overlap] ?? 'UNKNOWN';
  return (
    `${schedule.scheduleId} ${state} ${trigger}, queue ${schedule.jobTemplate?.queue ?? '?'}, overlap ${overlap}, ` +
    `next ${at(schedule.nextFireTime)}, last ${last}, fired ${schedule.firedCount}, missed ${schedule.missedCount}, skipped ${schedule.overlapSkippedCount}`
  );
}

function formatSpan(span: Duration): string {
  return formatRetentionAge(span);
}

/** `docket schedule create|get|list|pause|resume|delete`: the schedule RPCs of AdmissionService. */
export const scheduleCommand: Command = admissionCommand({
  name: 'schedule',
  summary: 'create, read, pause, resume and delete periodic jobs',
  help: `Usage: docket schedule create (--cron <expr> [--time-zone <zone>] | --every <age>)
                     --queue <queue> [--input <json>] [--label <text>]
                     [--priority <n>] [--overlap skip|buffer-one|allow]
                     [--catch-up-window <age>] [--id <id>] [--paused]
                     [--key <key>] [--json] [--url <url>] [--token <jwt>]
       docket schedule get <schedule_id> [--json] [--url <url>] [--token <jwt>]
       docket schedule list [--page-size <n>] [--page-token <token>] [--json]
                     [--url <url>] [--token <jwt>]
       docket schedule pause|resume|delete <schedule_id> [--key <key>] [--json]
                     [--url <url>] [--token <jwt>]

Schedules admit a job at every tick (AdmissionService CreateSchedule,
GetSchedule, ListSchedules, PauseSchedule, ResumeSchedule, DeleteSchedule):
  --cron <expr>        a 5-field cron (minute hour day-of-month month
                       day-of-week), e.g. "0 3 * * *"
  --time-zone <zone>   the IANA zone the cron is read in (default UTC)
  --every <age>        a fixed interval: a whole number and one unit, d,
                       h, m or s (at least 1s); ticks fall on its
                       multiples since the Unix epoch
  --queue, --input, --label, --priority
                       the job each tick submits (as docket submit)
  --overlap <policy>   while the previous tick's job has not ended: skip
                       the tick (default), buffer-one (fire the first such
                       tick when that job ends), or allow
  --catch-up-window <age>
                       a tick found due later than this (every firer was
                       down) is not fired but counted as missed (default 1h)
  --id <id>            choose the schedule's id (default: a fresh sch_ id)
  --paused             create it paused
Each tick's job is an ordinary job whose idempotency key derives from the
schedule id and the tick's nominal time: no tick ever makes two jobs.
pause stops firing; resume fires from the next tick on (the ticks of the
pause are not caught up); delete ends the schedule (its jobs stay). The
mutating actions are idempotent by --key, like docket submit.

Prints one line per schedule: id, state, trigger, queue, overlap, next and
last tick (with the job it admitted), and the fired, missed and skipped
counts; with --json the response as proto3 JSON.

Options:
${OWNER_OPTIONS_HELP}
(get and list take no --key:)
${admissionOptionsHelp('owner')}

Exit status: 0 done, 1 refused or failed (the gRPC code and reason are
printed), 2 bad arguments.
`,
  parse: parseScheduleArguments,
  call: runScheduleAction,
});

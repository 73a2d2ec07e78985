import type { DocketClient, JobStatus } from '@docket/client';
import { JobSchema, type Job } from '@docket/proto/docket/common/v1/job_pb.js';
import { UsageError, refusePositionals, type CliContext, type Command } from './command.js';
import { protoJsonLine, reportingClientFailures, withJobClient } from './job-client.js';
import { formatJobTable, parseStatusName } from './job-summary.js';
import { admissionOptionsHelp, parseAdmissionArguments, type AdmissionOptions } from './owner-call.js';

/** The largest page ListJobs serves. */
const MAX_PAGE_SIZE = 200;

/** Parsed `docket list` arguments. */
export interface ListArguments {
  readonly queue: string | undefined;
  /** Jobs in any of these statuses; empty: every status. */
  readonly statuses: readonly JobStatus[];
  readonly includeDeleted: boolean;
  /** Only the children of this job. */
  readonly parent: string | undefined;
  /** At most this many jobs; `undefined`: all of them. */
  readonly limit: number | undefined;
  /** One Job per line as proto3 JSON instead of the table. */
  readonly json: boolean;
  readonly call: AdmissionOptions;
}

/** Reads `docket list [--queue Q] [--status S ...] [--include-deleted] [--parent J] [--limit N] [--json] ...`; UsageError for anything wrong. */
export function parseListArguments(args: readonly string[]): ListArguments {
  const { positionals, values, call } = parseAdmissionArguments(args, {
    queue: { type: 'string' },
    status: { type: 'string', multiple: true },
    'include-deleted': { type: 'boolean' },
    parent: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
  });
  refusePositionals('list', positionals);
  const queue = values['queue'] as string | undefined;
  if (queue === '') throw new UsageError('--queue must not be empty');
  const statuses = ((values['status'] as unknown as string[] | undefined) ?? []).flatMap((text) => text.split(',')).map(parseStatusName);
  const limitText = values['limit'] as string | undefined;
  const limit = limitText === undefined ? undefined : /^\d+$/.test(limitText) ? Number(limitText) : Number.NaN;
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1)) throw new UsageError('--limit must be a whole number of at least 1');
  const parent = values['parent'] as string | undefined;
  if (parent === '') throw new UsageError('--parent must name a job');
  return { queue, statuses: [...new Set(statuses)], includeDeleted: values['include-deleted'] === true, parent, limit, json: values['json'] === true, call };
}

/**
 * Lists the jobs the filter selects, newest first, following ListJobs
 * page after page through the SDK's `list` iterator (stopping at
 * `--limit`). Prints the table once every job is read, or with `--json`
 * each Job as a line of proto3 JSON as it arrives. Resolves to the exit code.
 */
export async function listJobs(client: DocketClient, parsed: ListArguments, context: CliContext): Promise<number> {
  return reportingClientFailures('list', { name: 'admission', url: parsed.call.url }, context, async () => {
    const jobs: Job[] = [];
    const listing = client.list({
      statuses: parsed.statuses,
      ...(parsed.queue === undefined ? {} : { queue: parsed.queue }),
      includeDeleted: parsed.includeDeleted,
      ...(parsed.parent === undefined ? {} : { parentJobId: parsed.parent }),
      pageSize: Math.min(parsed.limit ?? MAX_PAGE_SIZE, MAX_PAGE_SIZE),
    });
    let count = 0;
    for await (const job of listing) {
      if (parsed.json) context.out(protoJsonLine(JobSchema, job));
      else jobs.push(job);
      count += 1;
      if (parsed.limit !== undefined && count >= parsed.limit) break;
    }
    if (!parsed.json) context.out(formatJobTable(jobs));
    return 0;
  });
}

/** `docket list`: AdmissionService.ListJobs, every page, through `@docket/client`. */
export const listCommand: Command = {
  name: 'list',
  summary: 'list jobs (by queue and status), newest first',
  help: `Usage: docket list [--queue <queue>] [--status <status>]... [--include-deleted]
                   [--parent <job>] [--limit <n>] [--json] [--url <url>] [--token <jwt>]

Lists the token's jobs (every job for an admin), newest first, reading
AdmissionService ListJobs page after page. The first page fixes the
listing: jobs admitted while it runs are not listed. Soft-deleted jobs are
left out unless --include-deleted.

Prints a table, one line per job, after a heading:
  ID  STATUS  QUEUE  ATTEMPTS  UPDATED
(ATTEMPTS as started/allowed, UPDATED as an ISO-8601 time; the heading
alone when no job matches.)

Options:
  --queue <queue>      only jobs of this queue
  --status <status>    only jobs in this status: WAITING, QUEUED, RUNNING,
                       PAUSED, RETRY_WAIT, CANCELLING, SUCCEEDED, FAILED,
                       CANCELLED or INTERRUPTED (any case); repeat it, or
                       separate with commas, for several
  --parent <job>       only the children of this job (jobs submitted with
                       it as a parent)
  --include-deleted    list soft-deleted jobs too
  --limit <n>          stop after n jobs (default: all)
  --json               print each Job as one line of proto3 JSON instead
${admissionOptionsHelp('owner')}

Exit status: 0 listed (also when nothing matched), 1 refused or failed
(the gRPC code and reason are printed; an expired listing is
invalid_argument CURSOR_EXPIRED), 2 bad arguments.
`,
  async run(args, context) {
    const parsed = parseListArguments(args);
    return withJobClient(parsed.call, context, (client) => listJobs(client, parsed, context));
  },
};

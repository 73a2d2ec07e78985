import { create, type JsonObject } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { DocketClient } from '@docket/client';
import { SubmitJobResponseSchema } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { OnParentFailure } from '@docket/proto/docket/common/v1/job_pb.js';
import { UsageError, refusePositionals, type CliContext, type Command } from './command.js';
import { EVENTS_URL_FLAG, EVENTS_URL_OPTION_HELP, eventsUrlOf, protoJsonLine, reportingClientFailures, withJobClient } from './job-client.js';
import { watchJob } from './watch-command.js';
import { statusName } from './job-summary.js';
import { parseJsonObjectFlag } from './json-object-flag.js';
import { parseRetentionAge } from './retention-age.js';
import { OWNER_OPTIONS_HELP, parseOwnerArguments, requestKey, type OwnerOptions } from './owner-call.js';
import { submitFile, type SubmitFileArguments } from './submit-file.js';

/** Parsed `docket submit` arguments. */
export interface SubmitArguments {
  readonly queue: string;
  readonly input: JsonObject;
  readonly label: string;
  readonly priority: number;
  /** `unique_while_active` key, if given. */
  readonly uniqueKey: string | undefined;
  /** The job's concurrency key, if given. */
  readonly concurrencyKey: string | undefined;
  /** Attempt limits, in seconds, if given. */
  readonly attemptTimeoutSeconds: bigint | undefined;
  readonly heartbeatTimeoutSeconds: bigint | undefined;
  /** Parents (`--after`, repeatable): the job waits until they settle. */
  readonly after: readonly string[];
  /** `--on-parent-failure run`: a failed parent does not cancel the job. */
  readonly runOnParentFailure: boolean;
  /** Print the SubmitJob response as proto3 JSON instead of the summary line. */
  readonly json: boolean;
  /** Then follow the job live, as `docket watch` does, and exit by its outcome. */
  readonly watch: boolean;
  /** The events service, for `--watch`. */
  readonly eventsUrl: string;
  readonly owner: OwnerOptions;
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/**
 * Reads `docket submit --queue Q [--input JSON] [--label L] [--priority N]
 * [--key KEY] [--json] ...`, or `docket submit --file F [--key KEY] [--json]`;
 * UsageError for anything wrong. The queue's
 * grammar and the input's size are the service's to judge.
 */
export function parseSubmitArguments(args: readonly string[]): SubmitArguments | SubmitFileArguments {
  const { positionals, values, owner } = parseOwnerArguments(args, {
    queue: { type: 'string' },
    input: { type: 'string' },
    label: { type: 'string' },
    priority: { type: 'string' },
    'unique-key': { type: 'string' },
    'concurrency-key': { type: 'string' },
    'attempt-timeout': { type: 'string' },
    'heartbeat-timeout': { type: 'string' },
    after: { type: 'string', multiple: true },
    'on-parent-failure': { type: 'string' },
    json: { type: 'boolean' },
    watch: { type: 'boolean' },
    file: { type: 'string' },
    ...EVENTS_URL_FLAG,
  });
  refusePositionals('submit', positionals, '; name the queue with --queue');
  const file = values['file'];
  if (typeof file === 'string') {
    const jobFlags = ['queue', 'input', 'label', 'priority', 'unique-key', 'concurrency-key', 'attempt-timeout', 'heartbeat-timeout', 'after', 'on-parent-failure', 'watch'].filter((flag) => values[flag] !== undefined);
    if (jobFlags.length > 0) throw new UsageError(`--file takes every job from the file; drop --${jobFlags.join(', --')}`);
    if (file === '') throw new UsageError('--file needs a path (or - for standard input)');
    return { file, json: values['json'] === true, owner };
  }
  const queue = values['queue'];
  if (typeof queue !== 'string' || queue === '') throw new UsageError('--queue is required');
  const after = ((values['after'] as unknown as string[] | undefined) ?? []).flatMap((text) => text.split(',')).filter((id) => id !== '');
  const onParentFailure = (values['on-parent-failure'] as string | undefined)?.toLowerCase();
  if (onParentFailure !== undefined && onParentFailure !== 'cancel' && onParentFailure !== 'run') throw new UsageError('--on-parent-failure must be cancel or run');
  if (onParentFailure !== undefined && after.length === 0) throw new UsageError('--on-parent-failure needs --after');
  return {
    queue,
    input: parseJsonObjectFlag(values['input'] as string | undefined, '--input'),
    label: (values['label'] as string | undefined) ?? '',
    priority: parsePriority(values['priority'] as string | undefined),
    uniqueKey: values['unique-key'] as string | undefined,
    concurrencyKey: values['concurrency-key'] as string | undefined,
    attemptTimeoutSeconds: durationFlag(values, 'attempt-timeout'),
    heartbeatTimeoutSeconds: durationFlag(values, 'heartbeat-timeout'),
    after,
    runOnParentFailure: onParentFailure === 'run',
    json: values['json'] === true,
    watch: values['watch'] === true,
    eventsUrl: eventsUrlOf(values),
    owner,
  };
}

function durationFlag(values: Record<string, unknown>, flag: string): bigint | undefined {
  const text = values[flag];
  return typeof text === 'string' ? parseRetentionAge(text, `--${flag}`) : undefined;
}

function parsePriority(text: string | undefined): number {
  if (text === undefined) return 0;
  const priority = /^-?\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(priority) || priority < INT32_MIN || priority > INT32_MAX) throw new UsageError('--priority must be a whole number (32-bit)');
  return priority;
}

/**
 * Admits the job (SubmitJob, through the SDK, which retries only with the
 * same key) and prints `submitted <job_id> to <queue>: <STATUS>`, or
 * `replayed ...` when the key was used before, or with `--json` the
 * SubmitJob response as one line of proto3 JSON. Resolves to the exit code.
 */
export async function submitJob(client: DocketClient, parsed: SubmitArguments, context: CliContext): Promise<number> {
  return (await admit(client, parsed, context)).code;
}

/** {@link submitJob}, also answering the admitted job's id. */
async function admit(client: DocketClient, parsed: SubmitArguments, context: CliContext): Promise<{ readonly code: number; readonly jobId?: string }> {
  let jobId: string | undefined;
  const code = await reportingClientFailures('submit', { name: 'admission', url: parsed.owner.url }, context, async () => {
    const idempotencyKey = requestKey('submit', parsed.owner, context);
    const receipt = await client.submit(
      {
        queue: parsed.queue,
        input: parsed.input,
        label: parsed.label,
        priority: parsed.priority,
        ...(parsed.uniqueKey === undefined ? {} : { uniqueWhileActive: { key: parsed.uniqueKey } }),
        ...(parsed.concurrencyKey === undefined ? {} : { concurrencyKey: parsed.concurrencyKey }),
        ...(parsed.attemptTimeoutSeconds === undefined ? {} : { attemptTimeout: { seconds: parsed.attemptTimeoutSeconds } }),
        ...(parsed.heartbeatTimeoutSeconds === undefined ? {} : { heartbeatTimeout: { seconds: parsed.heartbeatTimeoutSeconds } }),
        ...(parsed.after.length === 0 ? {} : { dependsOn: [...parsed.after] }),
        ...(parsed.runOnParentFailure ? { onParentFailure: OnParentFailure.RUN } : {}),
      },
      { idempotencyKey },
    );
    jobId = receipt.job.id;
    if (parsed.json) {
      const response = create(SubmitJobResponseSchema, {
        job: receipt.job,
        replayed: receipt.replayed,
        deduplicated: receipt.deduplicated,
        ...(receipt.idempotencyExpiresAt ? { idempotencyExpiresAt: timestampFromDate(receipt.idempotencyExpiresAt) } : {}),
      });
      context.out(protoJsonLine(SubmitJobResponseSchema, response));
      return 0;
    }
    const verb = receipt.replayed ? 'replayed' : receipt.deduplicated ? 'deduplicated' : 'submitted';
    const note = receipt.replayed
      ? ' (this key was used before: the job as first admitted)'
      : receipt.deduplicated
        ? ' (an active job holds this unique key: that job, nothing created)'
        : '';
    context.out(`${verb} ${receipt.job.id} to ${receipt.job.queue}: ${statusName(receipt.job.status)}${note}\n`);
    return 0;
  });
  return jobId === undefined ? { code } : { code, jobId };
}

/** `submit --watch`: admits the job, then follows it as `docket watch` does; the exit code is the watch's. */
async function submitAndWatch(client: DocketClient, parsed: SubmitArguments, context: CliContext): Promise<number> {
  const admitted = await admit(client, parsed, context);
  if (admitted.code !== 0 || admitted.jobId === undefined) return admitted.code === 0 ? 1 : admitted.code;
  return watchJob(client, { jobId: admitted.jobId, json: parsed.json, call: { ...parsed.owner, eventsUrl: parsed.eventsUrl } }, context);
}

/** `docket submit --queue Q ...`: AdmissionService.SubmitJob through `@docket/client`. */
export const submitCommand: Command = {
  name: 'submit',
  summary: 'submit a job to a queue',
  help: `Usage: docket submit --queue <queue> [--input <json>] [--label <text>]
                     [--priority <n>] [--unique-key <key>] [--concurrency-key <key>]
                     [--attempt-timeout <age>] [--heartbeat-timeout <age>]
                     [--after <job>]... [--on-parent-failure cancel|run]
                     [--key <key>] [--json] [--watch]
                     [--url <url>] [--events-url <url>] [--token <jwt>]
       docket submit --file <jobs.ndjson | -> [--key <key>] [--json]
                     [--url <url>] [--token <jwt>]

Admits a job (AdmissionService SubmitJob) owned by the token's subject.
The request is idempotent by its key: repeating it with the same key and
the same content answers with the job first admitted (printed as
"replayed"); the same key with other content is refused (already_exists
IDEMPOTENCY_CONFLICT). A call that may have succeeded (unavailable,
deadline exceeded, connection reset) is retried with the same key, so it
never admits two jobs.

Prints one line:
  submitted <job_id> to <queue>: QUEUED (WAITING with --after)
  replayed <job_id> to <queue>: <STATUS> (this key was used before: ...)
  deduplicated <job_id> to <queue>: <STATUS> (an active job holds ...)

Options:
  --queue <queue>   the queue ([a-z0-9][a-z0-9._-]{0,127}); required
  --input <json>    the job's input, a JSON object (default {})
  --label <text>    a label for humans (at most 256 characters)
  --priority <n>    higher is claimed first (default 0; a negative one as
                    --priority=-5)
  --unique-key <key>
                    unique_while_active: while a job of yours with this key
                    is not terminal in the queue, answer that job instead of
                    creating another (docs/uniqueness.md)
  --concurrency-key <key>
                    the job's concurrency key (a tenant, say): a queue with
                    a per-key limit (docket queue set --per-key-concurrency)
                    runs at most that many of one key's jobs at once and
                    rotates across keys
  --attempt-timeout <age>
                    end an attempt running longer than this, however it
                    renews (30s, 15m, 2h, 1d; 1s to 7 days)
  --heartbeat-timeout <age>
                    end an attempt not renewed for this long (1s to 24h)
  --after <job>     a parent: the job is WAITING until every parent has
                    succeeded, then QUEUED (repeat it, or separate ids with
                    commas; at most 100; docs/dependencies.md)
  --on-parent-failure cancel|run
                    what a parent that fails, is cancelled or interrupted
                    does: cancel the job (the default, reason
                    DEPENDENCY_FAILED) or run it once every parent settled
  --json            print the SubmitJob response as one line of proto3
                    JSON instead
  --watch           then follow the job live until it ends, exactly as
                    docket watch <job_id> does (journal, progress bar,
                    how it ended), and exit as docket watch does
  --file <path>     submit many jobs (AdmissionService SubmitJobs, 1,000 per
                    call, in file order): every non-empty line is one
                    SubmitJob request in proto3 JSON, for example
                    {"queue": "emails", "input": {"to": "a@example.com"}};
                    - reads standard input. A line without its own
                    "idempotencyKey" gets <key>.<line number>, so the same
                    file with the same --key replays instead of admitting
                    twice. A progress bar is drawn on a terminal; each
                    refused line is printed as line N: <code> <REASON>: ...,
                    then "submitted N jobs from <path> (R replayed, F
                    failed)". With --json, one line per job instead:
                    {"line": N, "submitted": <SubmitJob response>} or
                    {"line": N, "error": {code, reason, message}}. Takes no
                    job flags (--queue, --input, ...): each line is whole.
${EVENTS_URL_OPTION_HELP}
${OWNER_OPTIONS_HELP}

With --watch the exit status is docket watch's: 0 SUCCEEDED, 3 FAILED,
4 CANCELLED, 5 INTERRUPTED, 1 when the watch failed.

Exit status: 0 admitted (or replayed; with --file: every line), 1 refused or
failed (the gRPC code and reason are printed), 2 bad arguments.
`,
  async run(args, context) {
    const parsed = parseSubmitArguments(args);
    if ('file' in parsed) return withJobClient(parsed.owner, context, (client) => submitFile(client, parsed, context));
    return withJobClient({ ...parsed.owner, eventsUrl: parsed.eventsUrl }, context, (client) =>
      parsed.watch ? submitAndWatch(client, parsed, context) : submitJob(client, parsed, context),
    );
  },
};

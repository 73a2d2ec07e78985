import { JobStatus, isTerminalStatus, type DocketClient } from '@docket/client';
import type { Job } from '@docket/proto/docket/common/v1/job_pb.js';
import type { CliContext, Command } from './command.js';
import { EVENTS_URL_FLAG, EVENTS_URL_OPTION_HELP, eventsUrlOf, reportingClientFailures, withJobClient, type JobClientOptions } from './job-client.js';
import { statusName } from './job-summary.js';
import { DEFAULT_ADMISSION_URL, parseAdmissionArguments, soleJobId } from './owner-call.js';
import { WatchPrinter, type WatchOutputMode } from './watch-output.js';

/**
 * Exit codes of `docket watch` by the status the job ended in. Other
 * codes: 1 the watch failed (unreachable service, refused token, a
 * journal that does not verify), 2 bad arguments.
 */
export const WATCH_EXIT: Readonly<Partial<Record<JobStatus, number>>> = Object.freeze({
  [JobStatus.SUCCEEDED]: 0,
  [JobStatus.FAILED]: 3,
  [JobStatus.CANCELLED]: 4,
  [JobStatus.INTERRUPTED]: 5,
});

/** Parsed `docket watch` arguments. */
export interface WatchArguments {
  readonly jobId: string;
  /** Print frames as JSON lines instead of text. */
  readonly json: boolean;
  readonly call: JobClientOptions & { readonly eventsUrl: string };
}

/** Reads `docket watch <job_id> [--json] [--url URL] [--events-url URL] [--token JWT]`; UsageError for anything wrong. */
export function parseWatchArguments(args: readonly string[]): WatchArguments {
  const { positionals, values, call } = parseAdmissionArguments(args, { json: { type: 'boolean' }, ...EVENTS_URL_FLAG });
  return { jobId: soleJobId(positionals), json: values['json'] === true, call: { ...call, eventsUrl: eventsUrlOf(values) } };
}

/**
 * Follows the job with the SDK's `watch` (its journal from the first
 * event, each event verified against the hash chain, the stream resumed
 * after the last sequence on a disconnect) until the job has ended and its
 * last event was delivered; then reads the job (GetJob) and prints how it
 * ended. Resolves to the exit code of {@link WATCH_EXIT}, or 1 when a call
 * failed, the journal did not verify, or the job had not ended after all.
 */
export async function watchJob(client: DocketClient, parsed: WatchArguments, context: CliContext): Promise<number> {
  const mode: WatchOutputMode = parsed.json ? 'json' : context.outIsTerminal === true ? 'terminal' : 'text';
  const printer = new WatchPrinter(mode, context);
  const followed = await reportingClientFailures('watch', { name: 'events', url: parsed.call.eventsUrl }, context, async () => {
    try {
      for await (const frame of client.watch(parsed.jobId)) printer.frame(frame);
    } finally {
      printer.finishLine();
    }
    return 0;
  });
  if (followed !== 0) return followed;
  let ended: Job | undefined;
  const read = await reportingClientFailures('watch', { name: 'admission', url: parsed.call.url }, context, async () => {
    ended = await client.get(parsed.jobId);
    return 0;
  });
  if (read !== 0 || ended === undefined) return 1;
  printer.end(ended);
  if (!isTerminalStatus(ended.status)) {
    context.err(`docket watch: the stream ended but job ${parsed.jobId} is ${statusName(ended.status)}, not ended\n`);
    return 1;
  }
  return WATCH_EXIT[ended.status] ?? 1;
}

/** `docket watch <job_id>`: EventService ReadJobEvents and StreamJobEvents through `@docket/client`, then GetJob. */
export const watchCommand: Command = {
  name: 'watch',
  summary: "follow a job's journal and progress live until it ends",
  help: `Usage: docket watch <job_id> [--json] [--url <url>] [--events-url <url>]
                    [--token <jwt>]

Follows the job live: prints its journal from the first event, and the
current attempt's progress, until the job has ended and its last event
was delivered. Then reads the job and prints how it ended. Every event is
checked before it is printed: it is the next sequence (no gap, no
duplicate), it links to the event before it, and its hash recomputes from
the event and the submission's digest. A stream that drops, closes early
or goes silent for 45 s is reopened after the last event printed, so a
reconnection neither skips nor repeats an event.

Prints, one line each:
  <sequence> <type>        every journal event, for example 2 job.cancelled
  progress 3/10 "<msg>"    every progress report; on a terminal, one
                           progress bar instead, redrawn in place
  job <job_id> ended <STATUS>[: <CLASS> "<message>" | , result <json>]

Progress is live only: it is not in the journal and not replayed after a
reconnection.

Options:
  --json              print one JSON object per line instead:
                      {"event": <Event>}, {"progress": <Progress>}, and at
                      the end {"job": <Job>} (proto3 JSON)
${EVENTS_URL_OPTION_HELP}
  --url <url>         the admission service, read once the job has ended
                      (default ${DEFAULT_ADMISSION_URL})
  --token <jwt>       bearer token of the job's owner or an admin (default:
                      DOCKET_TOKEN, else an admin token minted with
                      DOCKET_AUTH_SECRET or docket dev's secret)

Exit status: 0 SUCCEEDED, 3 FAILED, 4 CANCELLED, 5 INTERRUPTED; 1 the
watch failed (job not found, service unavailable, token refused, or the
journal does not verify: data_loss JOURNAL_CORRUPT); 2 bad arguments.
`,
  async run(args, context) {
    const parsed = parseWatchArguments(args);
    return withJobClient(parsed.call, context, (client) => watchJob(client, parsed, context));
  },
};

import { setTimeout as delay } from 'node:timers/promises';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { DeletionState, type Deletion } from '@docket/proto/docket/common/v1/deletion_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { soleArgument, type CliContext, type Command } from './command.js';
import { admissionCommand, admissionOptionsHelp, parseAdmissionArguments, reportingFailures, type AdmissionClient, type AdmissionOptions } from './owner-call.js';

/** How often `docket deletion --wait` asks again. */
export const DELETION_POLL_MS = 500;

/** Parsed `docket deletion` arguments. */
export interface DeletionArguments {
  readonly deletionId: string;
  /** Poll until the deletion is COMPLETED or BLOCKED. */
  readonly wait: boolean;
  readonly call: AdmissionOptions;
}

/** How `--wait` waits between polls; injected so tests need not sleep. */
export interface DeletionPolling {
  readonly intervalMs: number;
  readonly sleep: (ms: number) => Promise<void>;
}

const REAL_POLLING: DeletionPolling = { intervalMs: DELETION_POLL_MS, sleep: (ms) => delay(ms) };

/** Reads `docket deletion <deletion_id> [--wait] ...`; UsageError for anything wrong. */
export function parseDeletionArguments(args: readonly string[]): DeletionArguments {
  const { positionals, values, call } = parseAdmissionArguments(args, { wait: { type: 'boolean' } });
  const deletionId = soleArgument(positionals, 'a deletion id is required (docket delete --hard prints it)', 'deletion');
  return { deletionId, wait: values['wait'] === true, call };
}

/** Where `--wait` stops: COMPLETED is final; BLOCKED needs an operator, so waiting on would be waiting blind. */
function stopsWaiting(state: DeletionState): boolean {
  return state === DeletionState.COMPLETED || state === DeletionState.BLOCKED;
}

/**
 * Shows the deletion operation (GetDeletion). With `wait`, asks again
 * every `polling.intervalMs` until it is COMPLETED or BLOCKED, printing
 * each new state to standard error, then prints the deletion as it
 * stands. Resolves to the exit code: 0, or with `wait` 1 when it stopped
 * at BLOCKED (the reason is printed).
 */
export async function showDeletion(
  client: AdmissionClient,
  parsed: DeletionArguments,
  context: CliContext,
  polling: DeletionPolling = REAL_POLLING,
): Promise<number> {
  return reportingFailures('deletion', parsed.call, context, async () => {
    const read = async (): Promise<Deletion> => {
      const { deletion } = await client.getDeletion({ deletionId: parsed.deletionId });
      if (!deletion) throw new Error(`no deletion in the answer for ${parsed.deletionId}`);
      return deletion;
    };
    let deletion = await read();
    if (parsed.wait && !stopsWaiting(deletion.state)) {
      context.err(`docket deletion: waiting for ${deletion.deletionId} to complete (now ${DeletionState[deletion.state]})\n`);
      while (!stopsWaiting(deletion.state)) {
        await polling.sleep(polling.intervalMs);
        const previous = deletion.state;
        deletion = await read();
        if (deletion.state !== previous) context.err(`docket deletion: ${deletion.deletionId} ${DeletionState[deletion.state]}\n`);
      }
    }
    context.out(formatDeletion(deletion));
    if (parsed.wait && deletion.state === DeletionState.BLOCKED) {
      context.err(
        `docket deletion: ${deletion.deletionId} is BLOCKED (${deletion.blockedReason || 'no reason given'}): the runner tries again on every round and the job stays HARD_DELETING\n`,
      );
      return 1;
    }
    return 0;
  });
}

/**
 * The deletion as `docket deletion` prints it: a headline with its state,
 * then one indented line per fact that applies (timings, attempts, and the
 * retry time or blocked reason of those states).
 */
export function formatDeletion(deletion: Deletion): string {
  const lines = [`deletion ${deletion.deletionId} of ${deletion.jobId}: ${DeletionState[deletion.state]}`];
  const fact = (name: string, value: string): void => {
    lines.push(`  ${`${name}:`.padEnd(13)}${value}`);
  };
  fact('job status', JobStatus[deletion.jobStatus] ?? String(deletion.jobStatus));
  fact('created', formatTime(deletion.createdAt));
  fact('updated', formatTime(deletion.updatedAt));
  if (deletion.completedAt) {
    const took = deletion.createdAt ? ` (took ${formatSeconds(timestampDate(deletion.completedAt).getTime() - timestampDate(deletion.createdAt).getTime())})` : '';
    fact('completed', `${formatTime(deletion.completedAt)}${took}`);
  }
  fact('attempts', String(deletion.attemptCount));
  if (deletion.state === DeletionState.RETRY_WAIT && deletion.retryNotBefore) fact('retry after', formatTime(deletion.retryNotBefore));
  if (deletion.state === DeletionState.BLOCKED) fact('blocked', deletion.blockedReason || 'no reason given');
  return `${lines.join('\n')}\n`;
}

function formatTime(timestamp: Timestamp | undefined): string {
  return timestamp ? timestampDate(timestamp).toISOString() : 'unknown';
}

function formatSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

/** `docket deletion <deletion_id> [--wait]`: AdmissionService.GetDeletion. */
export const deletionCommand: Command = admissionCommand({
  name: 'deletion',
  summary: 'show a hard deletion, or --wait until it completes',
  help: `Usage: docket deletion <deletion_id> [--wait]
                     [--url <url>] [--token <jwt>]

Shows a hard deletion (AdmissionService GetDeletion), the durable
operation docket delete --hard starts, which the execution service's
deletion runner carries out in the background, batch by batch:
  QUEUED       waiting for the runner
  RUNNING      erasing the job's data
  RETRY_WAIT   a batch failed transiently; tried again after "retry after"
  BLOCKED      a dependency is missing ("blocked" says which); the runner
               looks again on every round and carries on once it returns
  COMPLETED    done: the job is HARD_DELETED, only its tombstone is left
The job stays HARD_DELETING until COMPLETED, and cannot be restored in
any of these states.

Prints the deletion:
  deletion <deletion_id> of <job_id>: <STATE>
    job status:  <the status the job ended in>
    created:     <time>
    updated:     <time>
    completed:   <time> (took <seconds>)     once COMPLETED
    attempts:    <how often the runner started on it>
    retry after: <time>                       in RETRY_WAIT
    blocked:     <reason>                     in BLOCKED

Options:
  --wait          ask again every ${DELETION_POLL_MS} ms, printing each new state to
                  standard error, until the deletion is COMPLETED or
                  BLOCKED; then print it
${admissionOptionsHelp('owner')}

Exit status: 0 shown (with --wait: COMPLETED), 1 with --wait BLOCKED (the
reason is printed), or the call failed (the gRPC code and reason are
printed), 2 bad arguments.
`,
  parse: parseDeletionArguments,
  call: showDeletion,
});

import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { CliContext, Command } from './command.js';
import { admissionCommand, ownerHelpFooter, ownerRequest, parseOwnerArguments, soleJobId, type AdmissionClient, type OwnerOptions } from './owner-call.js';

/** Parsed `docket retry` arguments. */
export interface RetryArguments {
  readonly jobId: string;
  readonly owner: OwnerOptions;
}

/** Reads `docket retry <job_id> [--key KEY] ...`; UsageError for anything wrong. */
export function parseRetryArguments(args: readonly string[]): RetryArguments {
  const { positionals, owner } = parseOwnerArguments(args, {});
  return { jobId: soleJobId(positionals), owner };
}

/** Puts the ended job back to QUEUED (RetryJob) and prints its status; resolves to the exit code. */
export async function retryJob(client: AdmissionClient, parsed: RetryArguments, context: CliContext): Promise<number> {
  const { jobId, owner } = parsed;
  const retry = (idempotencyKey: string) => client.retryJob({ idempotencyKey, jobId });
  return ownerRequest('retry', owner, context, retry, ({ job }) => `retried ${jobId}: the job is ${job ? JobStatus[job.status] : 'unknown'}`);
}

/** `docket retry <job_id>`: AdmissionService.RetryJob. */
export const retryCommand: Command = admissionCommand({
  name: 'retry',
  summary: 'run a FAILED, CANCELLED or INTERRUPTED job again (back to QUEUED)',
  help: `Usage: docket retry <job_id> [--key <key>]
                     [--url <url>] [--token <jwt>]

Runs an ended job again (AdmissionService RetryJob): a FAILED, CANCELLED
or INTERRUPTED job goes back to QUEUED with a fresh attempt budget (its
max_attempts counted from now), journaled as job.retried. Its journal
continues, and the next claim runs under a higher fence than any earlier
attempt. A SUCCEEDED job, or one that has not ended, is refused
(failed_precondition ILLEGAL_TRANSITION).

Prints one line: retried <job_id>: the job is QUEUED

${ownerHelpFooter('re-queued')}`,
  parse: parseRetryArguments,
  call: retryJob,
});

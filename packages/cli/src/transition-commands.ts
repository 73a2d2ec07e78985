import type { DocketClient } from '@docket/client';
import type { CliContext, Command } from './command.js';
import { reportingClientFailures, withJobClient } from './job-client.js';
import { statusName } from './job-summary.js';
import { ownerHelpFooter, parseOwnerArguments, replayNote, requestKey, soleJobId, type OwnerOptions } from './owner-call.js';

/** The owner's changes of a job's course: CancelJob, PauseJob, ResumeJob. */
export type Transition = 'cancel' | 'pause' | 'resume';

/** Parsed `docket cancel|pause|resume` arguments. */
export interface TransitionArguments {
  readonly transition: Transition;
  readonly jobId: string;
  readonly owner: OwnerOptions;
}

/** Reads `docket cancel|pause|resume <job_id> [--key KEY] ...`; UsageError for anything wrong. */
export function parseTransitionArguments(transition: Transition, args: readonly string[]): TransitionArguments {
  const { positionals, owner } = parseOwnerArguments(args, {});
  return { transition, jobId: soleJobId(positionals), owner };
}

const PAST: Readonly<Record<Transition, string>> = { cancel: 'cancelled', pause: 'paused', resume: 'resumed' };

/**
 * Asks for the change under the request's key (through the SDK, which
 * retries only with that key) and prints `<cancelled|paused|resumed>
 * <job_id>: the job is <STATUS>`, the status the service answered with.
 * Resolves to the exit code.
 */
export async function changeJob(client: DocketClient, parsed: TransitionArguments, context: CliContext): Promise<number> {
  const { transition } = parsed;
  return reportingClientFailures(transition, { name: 'admission', url: parsed.owner.url }, context, async () => {
    const idempotencyKey = requestKey(transition, parsed.owner, context);
    const receipt = await client[transition](parsed.jobId, { idempotencyKey });
    context.out(`${PAST[transition]} ${parsed.jobId}: the job is ${statusName(receipt.job.status)}${replayNote(receipt.replayed)}\n`);
    return 0;
  });
}

const EFFECT: Readonly<Record<Transition, { summary: string; rpc: string; text: string }>> = {
  cancel: {
    summary: 'cancel a job (at once, or CANCELLING until its worker stops)',
    rpc: 'CancelJob',
    text: `A WAITING, QUEUED, PAUSED or RETRY_WAIT job ends CANCELLED at once (and
its children that depend on it are cancelled with DEPENDENCY_FAILED). A RUNNING job
goes CANCELLING: its worker is told at its next heartbeat, and the job
ends CANCELLED when the worker reports (or its lease runs out; a success
the worker already reported stands). An ended job is refused
(failed_precondition ILLEGAL_TRANSITION).`,
  },
  pause: {
    summary: 'pause a job (a running attempt checkpoints and stops)',
    rpc: 'PauseJob',
    text: `A WAITING, QUEUED or RETRY_WAIT job is PAUSED at once and is not claimed
until it is resumed (a child whose parents have not all settled resumes to
WAITING). A RUNNING job stays RUNNING with a pause requested: its
worker is told at its next heartbeat, saves a checkpoint and stops, and
the job is PAUSED when the worker reports (or its lease runs out), so
this prints RUNNING. Anything else is refused (failed_precondition
ILLEGAL_TRANSITION).`,
  },
  resume: {
    summary: 'resume a paused job (back to QUEUED)',
    rpc: 'ResumeJob',
    text: `A PAUSED job goes back to QUEUED, and the next attempt continues from
its checkpoint. A job PAUSED waiting for an approval is refused: only a
decision (docket approve / deny) lets it go on. Anything else is refused
too (failed_precondition ILLEGAL_TRANSITION).`,
  },
};

function transitionCommand(transition: Transition): Command {
  const effect = EFFECT[transition];
  return {
    name: transition,
    summary: effect.summary,
    help: `Usage: docket ${transition} <job_id> [--key <key>] [--url <url>] [--token <jwt>]

Asks the admission service to ${transition} the job (AdmissionService
${effect.rpc}) on its owner's behalf.
${effect.text}

Prints one line: ${PAST[transition]} <job_id>: the job is <STATUS>

${ownerHelpFooter('done')}`,
    async run(args, context) {
      const parsed = parseTransitionArguments(transition, args);
      return withJobClient(parsed.owner, context, (client) => changeJob(client, parsed, context));
    },
  };
}

/** `docket cancel <job_id>`: AdmissionService.CancelJob. */
export const cancelCommand: Command = transitionCommand('cancel');

/** `docket pause <job_id>`: AdmissionService.PauseJob. */
export const pauseCommand: Command = transitionCommand('pause');

/** `docket resume <job_id>`: AdmissionService.ResumeJob. */
export const resumeCommand: Command = transitionCommand('resume');

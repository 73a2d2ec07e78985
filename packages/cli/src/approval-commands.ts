import { ApprovalDecision } from '@docket/proto/docket/common/v1/approval_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { UsageError, type CliContext, type Command } from './command.js';
import {
  admissionCommand,
  ownerHelpFooter,
  parseOwnerArguments,
  replayNote,
  reportingFailures,
  requestKey,
  type AdmissionClient,
  type OwnerOptions,
} from './owner-call.js';

/** Parsed `docket approve` / `docket deny` arguments. */
export interface DecisionArguments {
  readonly decision: 'allow' | 'deny';
  readonly jobId: string;
  /** `undefined`: decide the job's pending approval, looked up with GetJob. */
  readonly approvalId: string | undefined;
  readonly comment: string;
  readonly owner: OwnerOptions;
}

/** Reads `docket approve|deny <job_id> [<approval_id>] [--comment TEXT] [--key KEY] ...`; UsageError for anything wrong. */
export function parseDecisionArguments(decision: 'allow' | 'deny', args: readonly string[]): DecisionArguments {
  const { positionals, values, owner } = parseOwnerArguments(args, { comment: { type: 'string' } });
  const [jobId, approvalId, ...extra] = positionals;
  if (jobId === undefined || jobId === '') throw new UsageError('a job id is required');
  if (approvalId === '') throw new UsageError('the approval id must not be empty');
  if (extra.length > 0) throw new UsageError(`one job and one approval at a time (also got ${extra.join(' ')})`);
  return { decision, jobId, approvalId, comment: (values['comment'] as string | undefined) ?? '', owner };
}

/**
 * Decides the approval: DecideApproval with ALLOW or DENY under the
 * request's key, after a GetJob for the job's pending approval when no
 * approval id was given. Prints the job's status after the decision and
 * resolves to the exit code.
 */
export async function decideApproval(client: AdmissionClient, parsed: DecisionArguments, context: CliContext): Promise<number> {
  const command = parsed.decision === 'allow' ? 'approve' : 'deny';
  return reportingFailures(command, parsed.owner, context, async () => {
    let approvalId = parsed.approvalId;
    if (approvalId === undefined) {
      const { job } = await client.getJob({ jobId: parsed.jobId });
      approvalId = job?.pendingApproval?.approvalId;
      if (!approvalId) {
        context.err(`docket ${command}: job ${parsed.jobId} has no pending approval (it is ${job ? JobStatus[job.status] : 'unknown'})\n`);
        return 1;
      }
    }
    const response = await client.decideApproval({
      idempotencyKey: requestKey(command, parsed.owner, context),
      jobId: parsed.jobId,
      approvalId,
      decision: parsed.decision === 'allow' ? ApprovalDecision.ALLOW : ApprovalDecision.DENY,
      comment: parsed.comment,
    });
    const status = response.job ? JobStatus[response.job.status] : 'unknown';
    context.out(`${parsed.decision === 'allow' ? 'allowed' : 'denied'} ${approvalId} of ${parsed.jobId}: the job is ${status}${replayNote(response.replayed)}\n`);
    return 0;
  });
}

function decisionCommand(decision: 'allow' | 'deny'): Command {
  const name = decision === 'allow' ? 'approve' : 'deny';
  const effect =
    decision === 'allow'
      ? 'ALLOW: the job goes PAUSED -> QUEUED, and the next claim runs it again\nfrom its checkpoint, in a new attempt under a higher fence.'
      : 'DENY: the job ends FAILED, with failure class APPROVAL_DENIED.';
  return admissionCommand({
    name,
    summary: decision === 'allow' ? "allow a job's pending approval (the job continues)" : "deny a job's pending approval (the job fails)",
    help: `Usage: docket ${name} <job_id> [<approval_id>] [--comment <text>] [--key <key>]
                     [--url <url>] [--token <jwt>]

Decides the approval a worker requested for the job (AdmissionService
DecideApproval) with ${effect}
Without <approval_id>, decides the job's pending approval (GetJob first).
A decision is spent once: deciding an approval again, with another key, is
refused (already_exists APPROVAL_SPENT).

Prints one line: ${decision === 'allow' ? 'allowed' : 'denied'} <approval_id> of <job_id>: the job is <STATUS>

${ownerHelpFooter('decided', '  --comment <text>  recorded with the decision')}`,
    parse: (args) => parseDecisionArguments(decision, args),
    call: decideApproval,
  });
}

/** `docket approve <job_id> [<approval_id>]`: DecideApproval ALLOW. */
export const approveCommand: Command = decisionCommand('allow');

/** `docket deny <job_id> [<approval_id>]`: DecideApproval DENY. */
export const denyCommand: Command = decisionCommand('deny');

import type { CliContext, Command } from './command.js';
import { admissionCommand, admissionOptionsHelp, parseAdmissionArguments, reportingFailures, soleJobId, type AdmissionClient, type AdmissionOptions } from './owner-call.js';

/** Parsed `docket hold` / `docket release` arguments. */
export interface LegalHoldArguments {
  /** `true` for `docket hold`, `false` for `docket release`. */
  readonly held: boolean;
  readonly jobId: string;
  readonly call: AdmissionOptions;
}

/** Reads `docket hold|release <job_id> [--url URL] [--token JWT]`; UsageError for anything wrong. */
export function parseLegalHoldArguments(held: boolean, args: readonly string[]): LegalHoldArguments {
  const { positionals, call } = parseAdmissionArguments(args, {});
  return { held, jobId: soleJobId(positionals), call };
}

/**
 * Places or releases the job's legal hold (SetLegalHold, idempotent by
 * its content, so no key) and prints the hold as the job now has it;
 * resolves to the exit code.
 */
export async function setLegalHold(client: AdmissionClient, parsed: LegalHoldArguments, context: CliContext): Promise<number> {
  const command = parsed.held ? 'hold' : 'release';
  return reportingFailures(
    command,
    parsed.call,
    context,
    async () => {
      const { job } = await client.setLegalHold({ jobId: parsed.jobId, held: parsed.held });
      const hold = job ? `legal hold ${job.legalHold ? 'on' : 'off'}` : 'no job in the answer';
      context.out(`${parsed.held ? 'held' : 'released'} ${parsed.jobId}: ${hold}\n`);
      return 0;
    },
    'admin',
  );
}

function legalHoldCommand(held: boolean): Command {
  const name = held ? 'hold' : 'release';
  const effect = held
    ? `Places a legal hold on the job (AdmissionService SetLegalHold, held
true): until it is released, docket delete (soft or --hard) is refused
(failed_precondition ILLEGAL_TRANSITION) and queue retention (see docket
help retention) passes the job by. A hold only stops deletion: it does
not pause or cancel the job. Holding a held job changes nothing.
Admins only: another token is refused (permission_denied).`
    : `Releases the job's legal hold (AdmissionService SetLegalHold, held
false): the job can be deleted again, by its owner or by its queue's
retention (see docket help retention). Releasing a job that is not held
changes nothing. Admins only: another token is refused
(permission_denied).`;
  return admissionCommand({
    name,
    summary: held ? 'place a legal hold on a job: no deletion touches it (admin)' : "release a job's legal hold (admin)",
    help: `Usage: docket ${name} <job_id> [--url <url>] [--token <jwt>]

${effect}

Prints one line: ${held ? 'held' : 'released'} <job_id>: legal hold ${held ? 'on' : 'off'}

Options:
${admissionOptionsHelp('admin')}

Exit status: 0 ${held ? 'held' : 'released'}, 1 refused or failed (the gRPC code and
reason are printed), 2 bad arguments.
`,
    parse: (args) => parseLegalHoldArguments(held, args),
    call: setLegalHold,
  });
}

/** `docket hold <job_id>`: AdmissionService.SetLegalHold held=true (admin). */
export const holdCommand: Command = legalHoldCommand(true);

/** `docket release <job_id>`: AdmissionService.SetLegalHold held=false (admin). */
export const releaseCommand: Command = legalHoldCommand(false);

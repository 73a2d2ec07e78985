import type { DocketClient } from '@docket/client';
import { JobSchema } from '@docket/proto/docket/common/v1/job_pb.js';
import type { CliContext, Command } from './command.js';
import { protoJsonLine, reportingClientFailures, withJobClient } from './job-client.js';
import { formatJob } from './job-summary.js';
import { admissionOptionsHelp, parseAdmissionArguments, soleJobId, type AdmissionOptions } from './owner-call.js';

/** Parsed `docket get` arguments. */
export interface GetArguments {
  readonly jobId: string;
  /** Print the Job as proto3 JSON instead of the summary. */
  readonly json: boolean;
  readonly call: AdmissionOptions;
}

/** Reads `docket get <job_id> [--json] ...`; UsageError for anything wrong. */
export function parseGetArguments(args: readonly string[]): GetArguments {
  const { positionals, values, call } = parseAdmissionArguments(args, { json: { type: 'boolean' } });
  return { jobId: soleJobId(positionals), json: values['json'] === true, call };
}

/** Reads the job (GetJob) and prints its summary, or with `--json` the Job as one line of proto3 JSON; resolves to the exit code. */
export async function getJob(client: DocketClient, parsed: GetArguments, context: CliContext): Promise<number> {
  return reportingClientFailures('get', { name: 'admission', url: parsed.call.url }, context, async () => {
    const job = await client.get(parsed.jobId);
    context.out(parsed.json ? protoJsonLine(JobSchema, job) : formatJob(job));
    return 0;
  });
}

/** `docket get <job_id>`: AdmissionService.GetJob through `@docket/client`. */
export const getCommand: Command = {
  name: 'get',
  summary: "show a job: status, attempts, progress, failure, approval, result",
  help: `Usage: docket get <job_id> [--json] [--url <url>] [--token <jwt>]

Reads the job's current projection (AdmissionService GetJob) and prints
a summary: the status, then one line per fact that applies.

  job <job_id>: <STATUS>
    queue:       <queue>
    lifecycle:   ACTIVE | SOFT_DELETED | HARD_DELETING | HARD_DELETED
    attempts:    <started> of <allowed>
    progress:    <done>/<total> "<message>"    (while an attempt reports it)
    failure:     <CLASS> [(retryable)]: <message>
    approval:    <approval_id> "<prompt>", requested <time>
    result:      <the result, JSON>
    created:     <time>
    updated:     <time>
    revision:    <revision>, latest event <sequence>

(also label, priority, unresolved signals, legal hold and deletion when
they apply). Another subject's job is not found (not_found), unless the
token is an admin's.

Options:
  --json          print the Job as one line of proto3 JSON instead
${admissionOptionsHelp('owner')}

Exit status: 0 shown, 1 not found, refused or failed (the gRPC code and
reason are printed), 2 bad arguments.
`,
  async run(args, context) {
    const parsed = parseGetArguments(args);
    return withJobClient(parsed.call, context, (client) => getJob(client, parsed, context));
  },
};

import { create } from '@bufbuild/protobuf';
import { ExplainCode, ExplainJobResponseSchema, type ExplainReason } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { JobExplanation } from '@docket/client';
import type { Command } from './command.js';
import { protoJsonLine, reportingClientFailures, withJobClient } from './job-client.js';
import { admissionOptionsHelp, parseAdmissionArguments, soleJobId } from './owner-call.js';

/** `job <id>: <STATUS>`, then one line per reason, most decisive first: `  <CODE>: <message>`. */
export function formatExplanation(explanation: JobExplanation): string {
  const lines = explanation.reasons.map((reason) => `  ${reasonLine(reason)}`);
  return `job ${explanation.job.id}: ${JobStatus[explanation.job.status]}\n${lines.join('\n')}\n`;
}

function reasonLine(reason: ExplainReason): string {
  return `${ExplainCode[reason.code]}: ${reason.message}`;
}

/** `docket explain <job_id>`: AdmissionService.ExplainJob through `@docket/client`. */
export const explainCommand: Command = {
  name: 'explain',
  summary: 'say why a job is or is not running now',
  help: `Usage: docket explain <job_id> [--json] [--url <url>] [--token <jwt>]

Asks the service why the job is where it is (AdmissionService ExplainJob;
docs/explain.md) and prints its status, then the reasons, most decisive
first, each a code and a sentence with the numbers:

  job <job_id>: QUEUED
    QUEUE_CONCURRENCY_FULL: queue reports allows 5 running jobs and 5 are running
    AHEAD_IN_QUEUE: 12 claimable jobs of queue reports come before it

The codes: CLAIMABLE_NOW, RUNNING, TERMINAL, WAITING_FOR_PARENTS,
RUN_AFTER, RETRY_BACKOFF, JOB_PAUSED, QUEUE_PAUSED,
QUEUE_CONCURRENCY_FULL, CONCURRENCY_KEY_FULL, RATE_LIMITED,
SIGNALS_UNRESOLVED, APPROVAL_PENDING, NO_LIVE_WORKER, AHEAD_IN_QUEUE.
Another subject's job is not found (not_found), unless the token is an
admin's.

Options:
  --json          print the ExplainJobResponse as one line of proto3 JSON
                  (the details of each reason included)
${admissionOptionsHelp('owner')}

Exit status: 0 explained, 1 not found, refused or failed (the gRPC code
and reason are printed), 2 bad arguments.
`,
  async run(args, context) {
    const { positionals, values, call } = parseAdmissionArguments(args, { json: { type: 'boolean' } });
    const jobId = soleJobId(positionals);
    return withJobClient(call, context, (client) =>
      reportingClientFailures('explain', { name: 'admission', url: call.url }, context, async () => {
        const explanation = await client.explain(jobId);
        context.out(
          values['json'] === true
            ? protoJsonLine(ExplainJobResponseSchema, create(ExplainJobResponseSchema, { job: explanation.job, reasons: [...explanation.reasons] }))
            : formatExplanation(explanation),
        );
        return 0;
      }),
    );
  },
};

import { isValidQueueName } from '@docket/contracts';
import type { RetentionPolicy } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { UsageError, type CliContext, type Command } from './command.js';
import { admissionCommand, admissionOptionsHelp, parseAdmissionArguments, reportingFailures, type AdmissionClient, type AdmissionOptions } from './owner-call.js';
import { formatRetentionAge, parseRetentionAge } from './retention-age.js';

/** Parsed `docket retention` arguments; both ages `undefined` clears the queue's policy. */
export interface RetentionArguments {
  readonly queue: string;
  /** Seconds after which ended jobs are soft-deleted; `undefined` keeps them. */
  readonly softDeleteAfterSeconds: bigint | undefined;
  /** Seconds after which soft-deleted jobs are hard-deleted; `undefined` keeps them. */
  readonly hardDeleteAfterSeconds: bigint | undefined;
  readonly call: AdmissionOptions;
}

/** Reads `docket retention <queue> [--soft-delete-after AGE] [--hard-delete-after AGE] ...`; UsageError for anything wrong. */
export function parseRetentionArguments(args: readonly string[]): RetentionArguments {
  const { positionals, values, call } = parseAdmissionArguments(args, {
    'soft-delete-after': { type: 'string' },
    'hard-delete-after': { type: 'string' },
  });
  const [queue, ...extra] = positionals;
  if (queue === undefined || queue === '') throw new UsageError('a queue is required');
  if (!isValidQueueName(queue)) throw new UsageError('the queue must match ^[a-z0-9][a-z0-9._-]{0,127}$');
  if (extra.length > 0) throw new UsageError(`one queue at a time (also got ${extra.join(' ')})`);
  const age = (flag: 'soft-delete-after' | 'hard-delete-after'): bigint | undefined => {
    const text = values[flag];
    return typeof text === 'string' ? parseRetentionAge(text, `--${flag}`) : undefined;
  };
  return { queue, softDeleteAfterSeconds: age('soft-delete-after'), hardDeleteAfterSeconds: age('hard-delete-after'), call };
}

/**
 * Sets the queue's retention policy (SetRetentionPolicy, idempotent by its
 * content, so no key), or clears it when neither age is given, and prints
 * the policy as the service stored it; resolves to the exit code.
 */
export async function setRetentionPolicy(client: AdmissionClient, parsed: RetentionArguments, context: CliContext): Promise<number> {
  return reportingFailures(
    'retention',
    parsed.call,
    context,
    async () => {
      const seconds = (value: bigint | undefined) => (value === undefined ? undefined : { seconds: value });
      const { policy } = await client.setRetentionPolicy({
        policy: {
          queue: parsed.queue,
          softDeleteAfter: seconds(parsed.softDeleteAfterSeconds),
          hardDeleteAfter: seconds(parsed.hardDeleteAfterSeconds),
        },
      });
      context.out(`${policy ? formatRetentionPolicy(policy) : `retention of ${parsed.queue}: no policy in the answer`}\n`);
      return 0;
    },
    'admin',
  );
}

/**
 * One line for a stored policy, for example `retention of reports:
 * soft-delete after 30d, hard-delete after 90d`; an unset age reads
 * "never", and a policy with neither age reads "none".
 */
export function formatRetentionPolicy(policy: RetentionPolicy): string {
  const { softDeleteAfter, hardDeleteAfter } = policy;
  if (!softDeleteAfter && !hardDeleteAfter) return `retention of ${policy.queue}: none (jobs are kept until deleted)`;
  const soft = softDeleteAfter ? `soft-delete after ${formatRetentionAge(softDeleteAfter)}` : 'soft-delete never';
  const hard = hardDeleteAfter ? `hard-delete after ${formatRetentionAge(hardDeleteAfter)}` : 'hard-delete never';
  return `retention of ${policy.queue}: ${soft}, ${hard}`;
}

/** `docket retention <queue> [--soft-delete-after AGE] [--hard-delete-after AGE]`: AdmissionService.SetRetentionPolicy (admin). */
export const retentionCommand: Command = admissionCommand({
  name: 'retention',
  summary: "set or clear a queue's retention policy (admin)",
  help: `Usage: docket retention <queue> [--soft-delete-after <age>]
                     [--hard-delete-after <age>] [--url <url>] [--token <jwt>]

Sets the queue's retention policy (AdmissionService SetRetentionPolicy),
which the execution service's retention loop applies to the queue's jobs:
  --soft-delete-after <age>  ended jobs (SUCCEEDED, FAILED, CANCELLED,
                             INTERRUPTED) unchanged for <age> are
                             soft-deleted (docket restore brings them back)
  --hard-delete-after <age>  soft-deleted jobs that have stayed so for
                             <age>, however they were soft-deleted, are
                             hard-deleted: erased for good (see docket help
                             delete)
An age is a whole number and one unit: d (days), h, m or s, for example
30d, 12h, 90m, 45s; at least 1s. An age left out is not applied (those
jobs are kept). Without either option the queue's policy is cleared.
Jobs under legal hold (see docket help hold) are never touched.
The policy replaces the queue's previous one as a whole (an age left out
now is cleared even if it was set before); setting the same policy again
changes nothing. Admins only: another token is refused
(permission_denied).

Prints the policy as stored, one line, for example:
  retention of reports: soft-delete after 30d, hard-delete after 90d
  retention of reports: soft-delete never, hard-delete after 12h
  retention of reports: none (jobs are kept until deleted)

Options:
${admissionOptionsHelp('admin')}

Exit status: 0 set or cleared, 1 refused or failed (the gRPC code and
reason are printed), 2 bad arguments.
`,
  parse: parseRetentionArguments,
  call: setRetentionPolicy,
});

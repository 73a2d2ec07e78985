import { setTimeout as sleep } from 'node:timers/promises';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { isIdOf, isValidQueueName } from '@docket/contracts';
import { BulkOperationSchema, BulkOperationState, type BulkOperation } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { UsageError, type CliContext, type Command } from './command.js';
import { protoJsonLine } from './job-client.js';
import { parseStatusName } from './job-summary.js';
import { OWNER_OPTIONS_HELP, admissionClient, parseOwnerArguments, replayNote, reportingFailures, requestKey, type AdmissionClient } from './owner-call.js';

/** How often `--wait` reads the operation again. */
const WAIT_POLL_MS = 500;

/** One line: `<id>: <STATE> <done>/<matched> (changed N, skipped N, failed N)`. */
export function formatBulkOperation(operation: BulkOperation): string {
  return (
    `${operation.id}: ${BulkOperationState[operation.state]} ${operation.done}/${operation.matched}` +
    ` (changed ${operation.changed}, skipped ${operation.skipped}, failed ${operation.failed})`
  );
}

function parseTime(text: unknown, flag: string) {
  if (typeof text !== 'string') return undefined;
  const at = new Date(text);
  if (Number.isNaN(at.getTime())) throw new UsageError(`${flag} must be an RFC 3339 time, like 2026-12-06T12:00:00Z`);
  return timestampFromDate(at);
}

/** Prints the operation, and with `wait` reads it again until it completes, printing each change. */
async function follow(client: AdmissionClient, first: BulkOperation, wait: boolean, json: boolean, context: CliContext): Promise<void> {
  const print = (operation: BulkOperation) => context.out(json ? protoJsonLine(BulkOperationSchema, operation) : `${formatBulkOperation(operation)}\n`);
  let operation = first;
  print(operation);
  while (wait && operation.state !== BulkOperationState.COMPLETED) {
    await sleep(WAIT_POLL_MS);
    const next = (await client.getBulkOperation({ operationId: operation.id })).operation;
    if (!next) throw new Error('GetBulkOperation answered without an operation');
    if (next.done !== operation.done || next.state !== operation.state) print(next);
    operation = next;
  }
}

/** `docket bulk retry|cancel|get`: RetryJobs, CancelJobs and GetBulkOperation (admin). */
export const bulkCommand: Command = {
  name: 'bulk',
  summary: 'retry or cancel every job a filter matches, as a durable operation (admin)',
  help: `Usage: docket bulk retry|cancel [--queue <queue>] [--status <status>]...
                     [--created-before <time>] [--created-after <time>]
                     [--wait] [--json] [--key <key>] [--url <url>] [--token <jwt>]
       docket bulk get <bop_id> [--wait] [--json] [--url <url>] [--token <jwt>]

Bulk operations (AdmissionService RetryJobs, CancelJobs, GetBulkOperation;
docs/operators.md): retry runs RetryJob on every ACTIVE job the filter
matches (FAILED, CANCELLED, INTERRUPTED, or the --status ones among them),
cancel runs CancelJob (WAITING, QUEUED, RUNNING, PAUSED, RETRY_WAIT, or the
--status ones among them), of every owner. The matching jobs are fixed when
the operation starts; the service then works through them in the
background, durably: a restart resumes it. A job that no longer qualifies
when its turn comes is skipped. Admins only.

Prints the operation as one line, and with --wait again at every change
until it completes:
  bop_...: RUNNING 120/500 (changed 118, skipped 2, failed 0)

Options:
  --queue <queue>          only this queue's jobs
  --status <status>        only jobs in this status (repeatable)
  --created-before <time>  only jobs admitted before this RFC 3339 time
  --created-after <time>   only jobs admitted at or after it
  --wait                   follow the operation until it completes
  --json                   print each BulkOperation as proto3 JSON
${OWNER_OPTIONS_HELP}

Exit status: 0 started (or replayed) or read, 1 refused or failed (the gRPC
code and reason are printed), 2 bad arguments.
`,
  async run(args, context) {
    const [verb, ...rest] = args;
    if (verb !== 'retry' && verb !== 'cancel' && verb !== 'get') throw new UsageError('say retry, cancel or get (docket help bulk)');
    const { positionals, values, owner } = parseOwnerArguments(rest, {
      queue: { type: 'string' },
      status: { type: 'string', multiple: true },
      'created-before': { type: 'string' },
      'created-after': { type: 'string' },
      wait: { type: 'boolean' },
      json: { type: 'boolean' },
    });
    const wait = values['wait'] === true;
    const json = values['json'] === true;
    const client = await admissionClient(owner, context);
    if (verb === 'get') {
      const [operationId, ...extra] = positionals;
      if (operationId === undefined || !isIdOf('bop', operationId) || extra.length > 0) throw new UsageError('one bulk operation id (bop_...) is required');
      return reportingFailures(
        'bulk',
        owner,
        context,
        async () => {
          const { operation } = await client.getBulkOperation({ operationId });
          if (!operation) throw new Error('GetBulkOperation answered without an operation');
          await follow(client, operation, wait, json, context);
          return 0;
        },
        'admin',
      );
    }
    if (positionals.length > 0) throw new UsageError(`unexpected ${positionals.join(' ')} (filters are flags)`);
    const queue = typeof values['queue'] === 'string' ? values['queue'] : '';
    if (queue !== '' && !isValidQueueName(queue)) throw new UsageError('--queue must match ^[a-z0-9][a-z0-9._-]{0,127}$');
    const statuses = ((values['status'] as unknown as string[] | undefined) ?? []).flatMap((text) => text.split(',')).map(parseStatusName);
    const filter = { queue, statuses, createdBefore: parseTime(values['created-before'], '--created-before'), createdAfter: parseTime(values['created-after'], '--created-after') };
    return reportingFailures(
      'bulk',
      owner,
      context,
      async () => {
        const idempotencyKey = requestKey(`bulk ${verb}`, owner, context);
        const answer = verb === 'retry' ? await client.retryJobs({ idempotencyKey, filter }) : await client.cancelJobs({ idempotencyKey, filter });
        if (!answer.operation) throw new Error('the service answered without an operation');
        if (answer.replayed && !json) context.err(`${replayNote(true).trim()}\n`);
        await follow(client, answer.operation, wait, json, context);
        return 0;
      },
      'admin',
    );
  },
};

import { timestampDate } from '@bufbuild/protobuf/wkt';
import { isValidQueueName } from '@docket/contracts';
import { WorkerSchema, WorkerState, type Worker } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { UsageError, type Command } from './command.js';
import { protoJsonLine } from './job-client.js';
import { admissionClient, admissionOptionsHelp, parseAdmissionArguments, reportingFailures } from './owner-call.js';

/** One line per worker: `<name> gen <g> <STATE> <incarnation> running <r>/<max> queues <a,b> last seen <time>`. */
export function formatWorker(worker: Worker): string {
  const seen = worker.lastSeenAt ? timestampDate(worker.lastSeenAt).toISOString() : '?';
  return (
    `${worker.workerName} gen ${worker.generation} ${WorkerState[worker.state]} ${worker.workerIncarnation}` +
    ` running ${worker.runningAttempts}/${worker.maxConcurrency} queues ${worker.queues.join(',')} last seen ${seen}`
  );
}

/** `docket workers [--queue <queue>]`: AdmissionService.ListWorkers (admin), every page. */
export const workersCommand: Command = {
  name: 'workers',
  summary: 'list worker registrations: LIVE, EXPIRED or SUPERSEDED (admin)',
  help: `Usage: docket workers [--queue <queue>] [--json] [--url <url>] [--token <jwt>]

Lists every registration of every worker name, newest first
(AdmissionService ListWorkers; docs/operators.md), one line each:

  <name> gen <generation> <STATE> <incarnation> running <held>/<max> queues <q1,q2> last seen <time>

LIVE: seen (a claim, a report or a renewal) within the lease duration;
EXPIRED: silent for longer, its attempts are lost once their leases end;
SUPERSEDED: a later registration of its name replaced it. Admins only:
another token is refused (permission_denied).

Options:
  --queue <queue> only the workers that serve this queue
  --json          print each Worker as one line of proto3 JSON instead
${admissionOptionsHelp('admin')}

Exit status: 0 listed, 1 refused or failed (the gRPC code and reason are
printed), 2 bad arguments.
`,
  async run(args, context) {
    const { positionals, values, call } = parseAdmissionArguments(args, { queue: { type: 'string' }, json: { type: 'boolean' } });
    if (positionals.length > 0) throw new UsageError(`unexpected ${positionals.join(' ')} (the queue is --queue <queue>)`);
    const queue = typeof values['queue'] === 'string' ? values['queue'] : '';
    if (queue !== '' && !isValidQueueName(queue)) throw new UsageError('--queue must match ^[a-z0-9][a-z0-9._-]{0,127}$');
    const client = await admissionClient(call, context);
    return reportingFailures(
      'workers',
      call,
      context,
      async () => {
        let pageToken = '';
        do {
          const page = await client.listWorkers({ queue, pageToken, pageSize: 200 });
          for (const worker of page.workers) context.out(values['json'] === true ? protoJsonLine(WorkerSchema, worker) : `${formatWorker(worker)}\n`);
          pageToken = page.nextPageToken;
        } while (pageToken !== '');
        return 0;
      },
      'admin',
    );
  },
};

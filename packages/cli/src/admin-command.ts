import { ConnectError } from '@connectrpc/connect';
import { mintToken, SERVICE_AUDIENCE } from '@docket/auth';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import { AcceptRollbackResponseSchema, StateService, type AcceptRollbackResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { resolveAuthSecret } from './auth-secret.js';
import { UsageError, parseCommandArgs, type Command } from './command.js';
import { protoJsonLine } from './job-client.js';
import { codeName } from './owner-call.js';
import { parseServiceUrl, serviceClient } from './service-client.js';
import { DEFAULT_SERVICE_PORTS } from './service-names.js';

/** Where `docket admin` reaches the state service when `--state-url` is not given. */
export const DEFAULT_STATE_URL = `http://127.0.0.1:${DEFAULT_SERVICE_PORTS.state}`;

/** The subject of the service token `docket admin` mints: it names the operator's tool in the state service's logs. */
const ADMIN_SUBJECT = 'docket-admin';

/** How long that token lives: one command. */
const ADMIN_TOKEN_TTL_SECONDS = 300;

const FLAGS = {
  'state-url': { type: 'string', multiple: true },
  'dry-run': { type: 'boolean' },
  json: { type: 'boolean' },
} as const;

/**
 * `docket admin accept-rollback`: after an asynchronous failover the state
 * service found to have lost acknowledged writes (DATABASE_ROLLED_BACK),
 * prints what may be lost and accepts the database as it is, replica by
 * replica (StateService AcceptRollback, with a service token).
 */
export const adminCommand: Command = {
  name: 'admin',
  summary: 'operator actions on the state service: accept-rollback',
  help: `Usage: docket admin accept-rollback [--state-url <url> ...] [--dry-run] [--json]

accept-rollback: when PostgreSQL failed over to a standby that had not
received every write the state service acknowledged (an asynchronous
standby; see docs/failover.md), each state replica that acknowledged such
a write reports NOT_SERVING and refuses calls with UNAVAILABLE, reason
DATABASE_ROLLED_BACK. This command asks each replica for its report and
then lets it serve again on the database as it is now:

  <url>: rolled back (<cause>): timeline <old> -> <new>, system <id>
    fork point <X/Y> (<how it is known>); acknowledged up to <X/Y>
    <n> acknowledged job(s) after the fork point checked, <m> lost
    lost <job_id>
    ...
    accepted: serving again

A job listed as lost was acknowledged to its submitter and is not in the
database: resubmit it (with the same idempotency key, it is admitted
anew). Other writes in the window (claims, reports, owner calls) are not
listed; the window's WAL positions bound them. A replica with nothing to
accept says so and changes nothing.

Options:
  --state-url <url>  a state replica (default ${DEFAULT_STATE_URL});
                     repeat for each replica
  --dry-run          report only; the replicas keep refusing calls
  --json             print each replica's AcceptRollbackResponse as one
                     line of proto3 JSON instead

The call is signed with DOCKET_SERVICE_AUTH_SECRET, else the secret
docket dev keeps in <data dir>/secrets.json.

Exit status: 0 reported (and accepted unless --dry-run) on every replica,
1 a replica could not be reached or refused, 2 bad arguments.
`,
  async run(args, context) {
    const { positionals, values } = parseCommandArgs(args, FLAGS, 'any');
    const [action, ...extra] = positionals;
    if (action !== 'accept-rollback') throw new UsageError(action === undefined ? 'name an action: accept-rollback' : `unknown action "${action}" (the only one is accept-rollback)`);
    if (extra.length > 0) throw new UsageError(`unexpected ${extra.join(' ')}`);
    const urls = (values['state-url'] ?? [DEFAULT_STATE_URL]).map((url) => parseServiceUrl(url, '--state-url'));
    const token = await mintToken({
      secret: await resolveAuthSecret(context.env, context.cwd, 'service'),
      subject: ADMIN_SUBJECT,
      role: 'service',
      ttlSeconds: ADMIN_TOKEN_TTL_SECONDS,
      audience: SERVICE_AUDIENCE,
    });
    const dryRun = values['dry-run'] === true;
    let failed = false;
    for (const url of urls) {
      try {
        const report = await serviceClient(StateService, url, token).acceptRollback({ dryRun });
        context.out(values.json === true ? protoJsonLine(AcceptRollbackResponseSchema, report) : formatRollbackReport(url, report, dryRun));
      } catch (error) {
        failed = true;
        context.err(`docket admin accept-rollback: ${url}: ${describeFailure(error)}\n`);
      }
    }
    return failed ? 1 : 0;
  },
};

/** How the fork point was found, in words. */
const FORK_SOURCES: Readonly<Record<string, string>> = {
  timeline_history: 'from the new timeline history',
  standby_position: "the standby's last known position: at most this much is lost",
  current_position: "the database's position now",
  unknown: 'unknown: everything acknowledged may be lost',
};

/** The report of one replica, as the help text shows it. */
export function formatRollbackReport(url: string, report: AcceptRollbackResponse, dryRun: boolean): string {
  if (!report.rolledBack) return `${url}: no rollback found; nothing to accept\n`;
  const lines = [
    `${url}: rolled back (${report.cause}): timeline ${report.recordedTimeline} -> ${report.timeline}, system ${report.systemIdentifier || 'unknown'}`,
    `  fork point ${report.forkLsn} (${FORK_SOURCES[report.forkSource] ?? report.forkSource}); acknowledged up to ${report.acknowledgedLsn}` +
      (report.acknowledgedAfterLastReading ? ', and after it at positions not read' : ''),
    `  ${report.checkedJobCount} acknowledged job(s) after the fork point checked, ${report.lostJobIds.length} lost` +
      (report.windowTruncated ? ` (the window was full: jobs acknowledged before ${report.windowStartLsn} were not kept)` : ''),
    ...report.lostJobIds.map((id) => `  lost ${id}`),
    report.accepted ? '  accepted: serving again' : dryRun ? '  not accepted (--dry-run): still refusing calls' : '  not accepted',
  ];
  return `${lines.join('\n')}\n`;
}

function describeFailure(error: unknown): string {
  if (!(error instanceof ConnectError)) return error instanceof Error ? error.message : String(error);
  const reason = error.findDetails(ErrorInfoSchema)[0]?.reason;
  const head = `${codeName(error.code)}${reason === undefined ? '' : ` ${reason}`}`;
  return `${head}${error.rawMessage === '' ? '' : `: ${error.rawMessage}`}`;
}

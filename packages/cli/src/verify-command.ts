import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { UsageError, parseCommandArgs, soleArgument, type CliContext, type Command } from './command.js';
import { callerToken, parseServiceUrl, serviceClient } from './service-client.js';
import { DEFAULT_SERVICE_PORTS } from './service-names.js';
import { classifyReadFailure } from './verify-failure.js';
import { formatJournalVerdict, verifyJournalPages } from './verify-journal.js';
import { readJournalPages, type JournalReader } from './verify-pages.js';

/** Where `docket verify` reads when `--events-url` is not given. */
export const DEFAULT_EVENTS_URL = `http://127.0.0.1:${DEFAULT_SERVICE_PORTS.events}`;

/** Exit codes of `docket verify`. */
export const VERIFY_EXIT = Object.freeze({ intact: 0, broken: 1, unverifiable: 2 } as const);

/** The subject of the admin token `docket verify` mints when given none. */
const MINTED_SUBJECT = 'docket-verify';

/**
 * `docket verify <job_id>`: re-reads a job's entire journal from the events
 * service and re-checks the chain locally, printing `intact: ...` (exit 0)
 * or `broken at sequence <n>: ...` (exit 1). A journal that cannot be read
 * (not found, unreachable, refused token, bad arguments) exits 2.
 */
export const verifyCommand: Command = {
  name: 'verify',
  summary: "re-read a job's journal and check its hash chain",
  help: `Usage: docket verify <job_id> [--events-url <url>] [--token <jwt>]

Re-reads the job's entire journal, page by page, through the events
service's ReadJobEvents and checks it again locally: every event belongs
to the job, sequences run 1, 2, 3... without a gap, each previous_hash is
the hash of the event before it (64 zeros for the first), and the pages
reach the latest sequence the service announced. The events service
recomputes every hash on every read and refuses a journal that does not
verify (DATA_LOSS, JOURNAL_CORRUPT, naming the first broken sequence).

Prints one line:
  intact: <job_id>, <n> events, head <hash>
  broken at sequence <n>: <why>

The chain is an unkeyed consistency check: it detects edits, deletions,
reorderings and grafts made without recomputing hashes, not a rewrite that
recomputes every hash (see docs/journal.md).

Options:
  --events-url <url>  the events service (default ${DEFAULT_EVENTS_URL})
  --token <jwt>       bearer token of the job's owner or an admin
                      (default: DOCKET_TOKEN, else an admin token minted
                      with DOCKET_AUTH_SECRET or docket dev's secret)

Exit status: 0 intact, 1 broken, 2 not verified (job not found, service
unavailable, token refused, bad arguments).
`,
  async run(args, context) {
    const { jobId, eventsUrl, token } = parseOrUsage(args);
    try {
      const reader: JournalReader = serviceClient(EventService, eventsUrl, token ?? (await callerToken(context, MINTED_SUBJECT)));
      return await verifyJob(reader, jobId, eventsUrl, context);
    } catch (error) {
      context.err(`docket verify: ${(error as Error).message}\n`);
      return VERIFY_EXIT.unverifiable;
    }
  },
};

/**
 * Verifies `jobId`'s journal with `reader`, prints the verdict (or why there
 * is none) and resolves to the exit code. The server's own DATA_LOSS /
 * JOURNAL_CORRUPT refusal is a broken journal at the sequence it names.
 */
export async function verifyJob(reader: JournalReader, jobId: string, eventsUrl: string, context: CliContext): Promise<number> {
  try {
    const verdict = await verifyJournalPages({ jobId }, readJournalPages(reader, jobId));
    context.out(`${formatJournalVerdict(verdict)}\n`);
    return verdict.intact ? VERIFY_EXIT.intact : VERIFY_EXIT.broken;
  } catch (error) {
    const failure = classifyReadFailure(error, jobId, eventsUrl);
    if (failure.kind === 'broken') {
      context.out(`${formatJournalVerdict(failure.verdict)}\n`);
      return VERIFY_EXIT.broken;
    }
    context.err(`docket verify: ${failure.message}\n`);
    return VERIFY_EXIT.unverifiable;
  }
}

function parseOrUsage(args: readonly string[]): { jobId: string; eventsUrl: string; token: string | undefined } {
  const parsed = parseCommandArgs(args, { 'events-url': { type: 'string' }, token: { type: 'string' } }, 'any');
  const jobId = soleArgument(parsed.positionals, 'a job id is required', 'job id');
  const eventsUrl = parseServiceUrl(parsed.values['events-url'] ?? DEFAULT_EVENTS_URL, '--events-url');
  const token = parsed.values.token;
  if (token === '') throw new UsageError('--token must not be empty');
  return { jobId, eventsUrl, token };
}

import { Code, ConnectError } from '@connectrpc/connect';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import type { JournalVerdict } from './verify-journal.js';

/**
 * What a failed journal read means for `docket verify`: the server's own
 * verification found the journal broken (a verdict, exit 1), or the
 * journal could not be read at all (a message, exit 2).
 */
export type ReadFailure =
  | { readonly kind: 'broken'; readonly verdict: JournalVerdict & { intact: false } }
  | { readonly kind: 'unverifiable'; readonly message: string };

/**
 * Classifies an error thrown while reading `jobId`'s journal from the
 * events service at `eventsUrl`. `DATA_LOSS` with reason `JOURNAL_CORRUPT`
 * is a broken journal at the sequence the server names in its ErrorInfo
 * metadata `sequence`; the same code without a usable sequence, and every
 * other failure, leaves the journal unverified, with a message that says
 * what to do about it.
 */
export function classifyReadFailure(error: unknown, jobId: string, eventsUrl: string): ReadFailure {
  if (!(error instanceof ConnectError)) {
    return { kind: 'unverifiable', message: error instanceof Error ? error.message : String(error) };
  }
  const info = error.findDetails(ErrorInfoSchema)[0];
  const named = info?.metadata['sequence'];
  if (error.code === Code.DataLoss && info?.reason === 'JOURNAL_CORRUPT' && named !== undefined && /^[1-9]\d*$/.test(named)) {
    return {
      kind: 'broken',
      verdict: {
        intact: false,
        jobId,
        brokenSequence: BigInt(named),
        why: 'refused_by_server',
        detail: 'the events service refuses to serve it (DATA_LOSS, JOURNAL_CORRUPT)',
      },
    };
  }
  return { kind: 'unverifiable', message: describeFailure(error, info?.reason, jobId, eventsUrl) };
}

function describeFailure(error: ConnectError, reason: string | undefined, jobId: string, eventsUrl: string): string {
  switch (error.code) {
    case Code.NotFound:
      return `job ${jobId} not found (or not visible to this token)`;
    case Code.Unavailable:
      return `the events service at ${eventsUrl} is unavailable: ${error.rawMessage}`;
    case Code.Unauthenticated:
      return 'the events service refused the token (UNAUTHENTICATED): pass --token, set DOCKET_TOKEN, or check DOCKET_AUTH_SECRET';
    case Code.PermissionDenied:
      return 'the token may not read journals (PERMISSION_DENIED): use a user or admin token';
    default:
      return `ReadJobEvents failed with ${grpcCodeName(error.code)}${reason === undefined ? '' : ` (${reason})`}: ${error.rawMessage}`;
  }
}

/** `DATA_LOSS` for `Code.DataLoss`: the name gRPC tools print. */
function grpcCodeName(code: Code): string {
  return Code[code].replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
}

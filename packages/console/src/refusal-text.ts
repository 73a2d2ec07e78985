import { isDocketClientError } from '@docket/client';
import { GRPC_CODE } from '@docket/contracts';

/** Each SPEC error reason (and the client's own), in words a person acting in the console can use. */
const REASON_WORDS: Readonly<Record<string, string>> = {
  ILLEGAL_TRANSITION: 'the job cannot make this change from the status it is in now',
  REVISION_MISMATCH: 'the job changed meanwhile; look at it again and retry',
  IDEMPOTENCY_CONFLICT: 'this idempotency key was already used for a different request; draw a new key',
  APPROVAL_SPENT: 'this approval has already been decided',
  SIGNALS_UNRESOLVED: 'signals delivered to a lost attempt must be reconciled before new ones are accepted',
  LIMIT_EXCEEDED: 'a limit was exceeded',
  INVALID_FIELD: 'a field is not valid',
  NOT_FOUND: 'not found',
  CURSOR_INVALID: 'the page token is not valid for this listing; start again from the first page',
  CURSOR_EXPIRED: 'the page token expired; start again from the first page',
  CURSOR_BEYOND_LATEST: 'the journal has no events that far yet',
  JOURNAL_CORRUPT: "the job's journal does not verify",
  UNAUTHENTICATED: 'the token was not accepted (expired, malformed or signed with another secret); sign in again',
  PERMISSION_DENIED: 'this token may not do that',
  UNAVAILABLE: 'the service is not reachable right now; try again with the same key',
  DATABASE_ROLLED_BACK: 'the database failed over and lost writes Docket had acknowledged; calls are refused until an operator runs docket admin accept-rollback, then try again with the same key',
  DEADLINE_EXCEEDED: 'the service did not answer in time; try again with the same key',
  CANCELLED: 'the call was cancelled',
  INTERNAL: 'the service failed; try again later',
  STALE_AUTHORITY: 'the attempt no longer holds the job',
  STALE_INCARNATION: 'the worker was superseded',
  OPERATION_MISMATCH: 'the operation id was used for another request',
};

/** A refused or failed call, as the console shows it. */
export interface Refusal {
  /** The SPEC reason (`ILLEGAL_TRANSITION`), or the gRPC code name when the service sent none. */
  readonly reason: string;
  /** What it means, in words, with the service's own (allowlisted) explanation when it gave one. */
  readonly words: string;
  /** For JOURNAL_CORRUPT and LIMIT_EXCEEDED: the ErrorInfo metadata (the sequence, the limit). */
  readonly metadata: Readonly<Record<string, string>>;
}

/** gRPC code numbers to the SPEC's names (`INVALID_ARGUMENT`), for failures without a reason. */
const CODE_NAMES: ReadonlyMap<number, string> = new Map(Object.entries(GRPC_CODE).map(([name, code]) => [code, name]));

/**
 * What `error` (anything a `@docket/client` call threw) means. The
 * message of a `DocketClientError` is already scrubbed of the token and
 * the key; anything else is described by its kind only, never by its
 * text, so nothing unexpected (a stack, a URL with a secret) reaches the
 * page.
 */
export function describeRefusal(error: unknown): Refusal {
  if (!isDocketClientError(error)) return { reason: 'UNKNOWN', words: 'something went wrong in the console', metadata: {} };
  const reason = error.reason ?? CODE_NAMES.get(error.code) ?? 'UNKNOWN';
  const explanation = REASON_WORDS[reason] ?? 'the service refused the request';
  const said = serverExplanation(error.message);
  const violations = error.fieldViolations.map((v) => `${v.field}: ${v.description}`).join('; ');
  const detail = [said, violations].filter((part) => part !== '' && part !== explanation).join('; ');
  return { reason, words: detail === '' ? explanation : `${explanation} (${detail})`, metadata: error.metadata };
}

/** The service's explanation from a client error message (`SubmitJob failed: REASON: explanation`). */
function serverExplanation(message: string): string {
  const match = /^[A-Za-z]+ failed: [A-Za-z_]+(?:: (.*))?$/s.exec(message);
  return match?.[1]?.trim() ?? '';
}

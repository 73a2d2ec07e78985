import { LIMITS, type LimitName } from './limits.js';

/** The `google.rpc.ErrorInfo` domain of every error Docket returns (SPEC §9). */
export const ERROR_DOMAIN = 'docket';

/**
 * The gRPC status codes by name, with the numbers gRPC and Connect (`Code`)
 * use on the wire, so this package needs no RPC library to speak of them.
 */
export const GRPC_CODE = Object.freeze({
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const);

/** The name of a gRPC status code. */
export type GrpcCodeName = keyof typeof GRPC_CODE;

const reasonCodes = {
  INVALID_FIELD: GRPC_CODE.INVALID_ARGUMENT,
  LIMIT_EXCEEDED: GRPC_CODE.INVALID_ARGUMENT,
  BATCH_TOO_LARGE: GRPC_CODE.INVALID_ARGUMENT,
  CURSOR_INVALID: GRPC_CODE.INVALID_ARGUMENT,
  CURSOR_EXPIRED: GRPC_CODE.INVALID_ARGUMENT,
  IDEMPOTENCY_CONFLICT: GRPC_CODE.ALREADY_EXISTS,
  APPROVAL_SPENT: GRPC_CODE.ALREADY_EXISTS,
  NOT_FOUND: GRPC_CODE.NOT_FOUND,
  ILLEGAL_TRANSITION: GRPC_CODE.FAILED_PRECONDITION,
  STALE_INCARNATION: GRPC_CODE.FAILED_PRECONDITION,
  STALE_AUTHORITY: GRPC_CODE.FAILED_PRECONDITION,
  OPERATION_MISMATCH: GRPC_CODE.FAILED_PRECONDITION,
  SIGNALS_UNRESOLVED: GRPC_CODE.FAILED_PRECONDITION,
  PARENT_ITEM_FAILED: GRPC_CODE.FAILED_PRECONDITION,
  REVISION_MISMATCH: GRPC_CODE.ABORTED,
  CURSOR_BEYOND_LATEST: GRPC_CODE.OUT_OF_RANGE,
  JOURNAL_CORRUPT: GRPC_CODE.DATA_LOSS,
  UNAUTHENTICATED: GRPC_CODE.UNAUTHENTICATED,
  PERMISSION_DENIED: GRPC_CODE.PERMISSION_DENIED,
  DEADLINE_EXCEEDED: GRPC_CODE.DEADLINE_EXCEEDED,
  UNAVAILABLE: GRPC_CODE.UNAVAILABLE,
  DATABASE_ROLLED_BACK: GRPC_CODE.UNAVAILABLE,
  UNIMPLEMENTED: GRPC_CODE.UNIMPLEMENTED,
  INTERNAL: GRPC_CODE.INTERNAL,
  CANCELLED: GRPC_CODE.CANCELLED,
} as const;

/**
 * The closed vocabulary of `ErrorInfo.reason` values (SPEC §9). Clients in
 * every language switch on these names, so none is ever renamed or reused.
 */
export type ErrorReason = keyof typeof reasonCodes;

/**
 * The one gRPC code each reason travels with. A reason never appears under
 * another code, so a client may rely on either.
 */
export const ERROR_REASON_CODES: Readonly<Record<ErrorReason, number>> = Object.freeze(reasonCodes);

/** Every reason, in table order; handy for exhaustive tests and docs. */
export const ERROR_REASONS: readonly ErrorReason[] = Object.freeze(
  Object.keys(reasonCodes) as ErrorReason[],
);

/** Whether `x` is one of the closed set of reasons (own keys only, so `toString` is not). */
export function isErrorReason(x: unknown): x is ErrorReason {
  return typeof x === 'string' && Object.hasOwn(reasonCodes, x);
}

/** One entry of a `google.rpc.BadRequest`: which request field was wrong and how. */
export interface FieldViolation {
  /** The proto field path, snake_case (`idempotency_key`, `retry_policy.max_attempts`). */
  field: string;
  /** What is wrong, for humans. Never echoes the offending value. */
  description: string;
  /** Optional UPPER_SNAKE_CASE cause, e.g. `LIMIT_EXCEEDED`. */
  reason?: string;
}

/** Options of {@link DocketError}; both are copied and frozen on construction. */
export interface DocketErrorOptions {
  /** `ErrorInfo.metadata`: stable, machine-readable, never secret. */
  metadata?: Record<string, string>;
  /** `BadRequest.field_violations`, for INVALID_ARGUMENT reasons. */
  fieldViolations?: FieldViolation[];
}

/**
 * A domain failure that knows its wire shape: the reason, the gRPC code it
 * implies, `ErrorInfo` metadata and `BadRequest` field violations. Each
 * service maps it to a `ConnectError` in one place.
 *
 * The message, metadata and violations go to callers verbatim, so they must
 * never carry SQL, paths, tokens, idempotency keys or worker-supplied text
 * (SPEC §9); the factories below respect that.
 *
 * Recognise it with {@link isDocketError}, not `instanceof`: two copies of
 * this package in one process produce two distinct classes.
 */
export class DocketError extends Error {
  override readonly name = 'DocketError';
  /** The `ErrorInfo.reason`. */
  readonly reason: ErrorReason;
  /** The gRPC code, always `ERROR_REASON_CODES[reason]`. */
  readonly grpcCode: number;
  /** `ErrorInfo.metadata` (frozen). */
  readonly metadata: Readonly<Record<string, string>>;
  /** `BadRequest.field_violations` (frozen). */
  readonly fieldViolations: readonly FieldViolation[];

  constructor(reason: ErrorReason, message: string, options: DocketErrorOptions = {}) {
    super(message);
    this.reason = reason;
    this.grpcCode = ERROR_REASON_CODES[reason];
    this.metadata = Object.freeze({ ...options.metadata });
    this.fieldViolations = Object.freeze(
      (options.fieldViolations ?? []).map((violation) => Object.freeze({ ...violation })),
    );
  }
}

/**
 * Whether `e` is a {@link DocketError}, judged by its `name` and a known
 * `reason` so that it also recognises errors from another copy of this
 * package.
 */
export function isDocketError(e: unknown): e is DocketError {
  if (typeof e !== 'object' || e === null) return false;
  const candidate = e as { name?: unknown; reason?: unknown };
  return candidate.name === 'DocketError' && isErrorReason(candidate.reason);
}

/**
 * `INVALID_ARGUMENT` / `INVALID_FIELD` with one field violation. Pass a
 * description of the rule ("must be 64 lowercase hex characters"), never
 * the rejected value.
 */
export function invalidField(field: string, description: string): DocketError {
  return new DocketError('INVALID_FIELD', `invalid ${field}`, {
    fieldViolations: [{ field, description }],
  });
}

/**
 * `INVALID_ARGUMENT` / `LIMIT_EXCEEDED` with metadata `{limit, max}` naming
 * the limit and its value (SPEC §6), plus a field violation when `field` is
 * given.
 */
export function limitExceeded(limit: LimitName, field?: string): DocketError {
  const max = String(LIMITS[limit]);
  const description = `exceeds the ${limit} limit of ${max}`;
  return new DocketError('LIMIT_EXCEEDED', `${field ?? 'request'} ${description}`, {
    metadata: { limit, max },
    fieldViolations: field === undefined ? [] : [{ field, description, reason: 'LIMIT_EXCEEDED' }],
  });
}

/**
 * `INVALID_ARGUMENT` / `BATCH_TOO_LARGE` for a batch call with more items
 * than `limit` allows, with metadata `{limit, max}` like LIMIT_EXCEEDED and
 * a violation on the items field (SPEC section 14).
 */
export function batchTooLarge(limit: LimitName, field: string): DocketError {
  const max = String(LIMITS[limit]);
  const description = `must hold at most ${max} items`;
  return new DocketError('BATCH_TOO_LARGE', `${field} ${description}`, {
    metadata: { limit, max },
    fieldViolations: [{ field, description, reason: 'BATCH_TOO_LARGE' }],
  });
}

/**
 * `NOT_FOUND` for a kind of thing ("job", "deletion"). Missing, deleted and
 * someone else's all produce this identical error (same message, no
 * metadata) so that nothing about existence leaks (SPEC §9).
 */
export function notFound(what: string): DocketError {
  return new DocketError('NOT_FOUND', `${what} not found`);
}

/**
 * The codes that mean the server refused the call before changing anything:
 * every Docket reason with these codes is decided before any write.
 */
const DEFINITELY_NOT_APPLIED: ReadonlySet<number> = new Set([
  GRPC_CODE.INVALID_ARGUMENT,
  GRPC_CODE.NOT_FOUND,
  GRPC_CODE.ALREADY_EXISTS,
  GRPC_CODE.PERMISSION_DENIED,
  GRPC_CODE.FAILED_PRECONDITION,
  GRPC_CODE.ABORTED,
  GRPC_CODE.OUT_OF_RANGE,
  GRPC_CODE.UNIMPLEMENTED,
  GRPC_CODE.DATA_LOSS,
  GRPC_CODE.UNAUTHENTICATED,
]);

/**
 * Whether a call that ended with `grpcCode` may nevertheless have taken
 * effect, so a retry must reuse the same idempotency key (and will then
 * replay the original response).
 *
 * Like Temporal's `OperationPossiblySucceeded` this is a deny-list: only
 * codes Docket uses for refusals decided before any write answer `false`.
 * Everything else answers `true`: `DEADLINE_EXCEEDED`, `UNAVAILABLE`,
 * `UNKNOWN` and `CANCELLED` (the response was lost or abandoned after the
 * request left), `INTERNAL` (also what transports report for a reset
 * stream, which can happen after the commit), `RESOURCE_EXHAUSTED` (Docket
 * never sends it, so it came from a transport limit, possibly on the
 * response), `OK`, and any unknown number. Erring towards `true` costs at
 * most a replay; erring towards `false` could cost a duplicate job.
 */
export function mayHaveSucceeded(grpcCode: number): boolean {
  return !DEFINITELY_NOT_APPLIED.has(grpcCode);
}

import { Code, ConnectError } from '@connectrpc/connect';
import { isNamedCallError } from '@docket/client-kit';
import { BadRequestSchema, ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';

/** One entry of a `google.rpc.BadRequest`: which request field was wrong and how. */
export interface ClientFieldViolation {
  /** The proto field path, snake_case (`idempotency_key`, `retry_policy.max_attempts`). */
  readonly field: string;
  /** What is wrong, for humans; the server never echoes the offending value. */
  readonly description: string;
}

/**
 * Reasons the client raises on its own, next to the SPEC's reasons that
 * come from the services (`IDEMPOTENCY_CONFLICT`, `JOURNAL_CORRUPT`, ...):
 * - `INVALID_FIELD` (code INVALID_ARGUMENT) for an argument refused before
 *   any call, such as a malformed idempotency key;
 * - `JOURNAL_CORRUPT` (code DATA_LOSS) when the client's own hash-chain
 *   check of a watched journal fails (metadata `detected_by: client`);
 * - `CANCELLED` (code CANCELLED) when the caller's AbortSignal fired.
 */
export type LocalClientErrorReason = 'INVALID_FIELD' | 'JOURNAL_CORRUPT' | 'CANCELLED';

/** Options of {@link DocketClientError}. */
export interface DocketClientErrorOptions {
  readonly metadata?: Readonly<Record<string, string>>;
  readonly fieldViolations?: readonly ClientFieldViolation[];
  readonly cause?: unknown;
}

/**
 * The one error type `@docket/client` throws. For a refused or failed call
 * it carries the gRPC `code`, and the `google.rpc.ErrorInfo` reason and
 * metadata and the `google.rpc.BadRequest` field violations the service
 * sent; for a transport failure (no details) `reason` is `undefined`.
 *
 * Its message names the RPC, the reason (or code) and the server's message,
 * with the call's idempotency key and bearer token scrubbed out should they
 * ever appear there, so it is safe to log. Recognise it by `name` (see
 * {@link isDocketClientError}), not `instanceof`, when two copies of the
 * client may share a process.
 */
export class DocketClientError extends Error {
  override readonly name = 'DocketClientError';
  /** The gRPC status code, as Connect's `Code` numbers. */
  readonly code: Code;
  /** The ErrorInfo reason (SPEC vocabulary), a {@link LocalClientErrorReason}, or `undefined` for transport failures. */
  readonly reason: string | undefined;
  /** ErrorInfo metadata (frozen); for example `{limit, max}` for LIMIT_EXCEEDED. */
  readonly metadata: Readonly<Record<string, string>>;
  /** BadRequest field violations (frozen). */
  readonly fieldViolations: readonly ClientFieldViolation[];

  constructor(code: Code, reason: string | undefined, message: string, options: DocketClientErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.reason = reason;
    this.metadata = Object.freeze({ ...options.metadata });
    this.fieldViolations = Object.freeze((options.fieldViolations ?? []).map((v) => Object.freeze({ ...v })));
  }

  /**
   * Decodes what a call to `rpc` threw. A `ConnectError` keeps its code and
   * its ErrorInfo / BadRequest details; anything else becomes `UNKNOWN`
   * with no reason. Every string in `secrets` (the call's idempotency key,
   * the token) is replaced by `<redacted>` in the message, metadata and
   * violations.
   */
  static fromCall(rpc: string, error: unknown, secrets: readonly string[] = []): DocketClientError {
    if (isDocketClientError(error)) return error;
    const connect = ConnectError.from(error);
    const info = connect.findDetails(ErrorInfoSchema)[0];
    const badRequest = connect.findDetails(BadRequestSchema)[0];
    const scrub = scrubber(secrets);
    const reason = info?.reason || undefined;
    const what = reason ?? Code[connect.code] ?? String(connect.code);
    const text = connect.rawMessage ? `: ${scrub(connect.rawMessage)}` : '';
    return new DocketClientError(connect.code, reason, `${rpc} failed: ${what}${text}`, {
      metadata: Object.fromEntries(Object.entries(info?.metadata ?? {}).map(([k, v]) => [k, scrub(v)])),
      fieldViolations: (badRequest?.fieldViolations ?? []).map((v) => ({ field: v.field, description: scrub(v.description) })),
      cause: error,
    });
  }

  /** An error the client raises on its own (see {@link LocalClientErrorReason}). */
  static local(reason: LocalClientErrorReason, message: string, options: DocketClientErrorOptions = {}): DocketClientError {
    const code = reason === 'INVALID_FIELD' ? Code.InvalidArgument : reason === 'JOURNAL_CORRUPT' ? Code.DataLoss : Code.Canceled;
    return new DocketClientError(code, reason, message, options);
  }
}

/** Whether `error` is a {@link DocketClientError} (judged by name and code, so across copies of the package). */
export function isDocketClientError(error: unknown): error is DocketClientError {
  return isNamedCallError(error, 'DocketClientError');
}

function scrubber(secrets: readonly string[]): (text: string) => string {
  const present = secrets.filter((secret) => secret.length > 0);
  return (text) => present.reduce((out, secret) => out.split(secret).join('<redacted>'), text);
}

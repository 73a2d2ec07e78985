import { Code, ConnectError } from '@connectrpc/connect';
import { isNamedCallError } from '@docket/client-kit';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';

/**
 * Reasons the SDK itself raises, next to the SPEC's reasons that come from
 * the service (`STALE_AUTHORITY`, `STALE_INCARNATION`, `INVALID_FIELD`, ...):
 * - `ATTEMPT_ENDED`: a job helper was called after its handler settled, or
 *   after the attempt's authority was lost;
 * - `WORKER_STATE`: `start()` called twice, or after the worker stopped;
 * - `INVALID_OPTION`: `createWorker` options or a helper's argument are wrong.
 */
export type LocalWorkerErrorReason = 'ATTEMPT_ENDED' | 'WORKER_STATE' | 'INVALID_OPTION';

/**
 * The one error type the worker SDK throws. For a refused or failed call it
 * carries the gRPC `code` and the `google.rpc.ErrorInfo` reason the service
 * sent (for example `STALE_AUTHORITY`); for SDK misuse, a
 * {@link LocalWorkerErrorReason}. Recognise it by `name` and `reason`, not
 * `instanceof`, when two copies of the SDK may share a process.
 *
 * Its message never includes request payloads, tokens or the server's raw
 * text beyond the reason, so it is safe to log.
 */
export class DocketWorkerError extends Error {
  override readonly name = 'DocketWorkerError';
  /** The gRPC status code (`Code` numbers); `FailedPrecondition`/`InvalidArgument` for local reasons. */
  readonly code: Code;
  /** The ErrorInfo reason, a local reason, or `undefined` when the failure carried none (transport errors). */
  readonly reason: string | undefined;

  constructor(code: Code, reason: string | undefined, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.reason = reason;
  }

  /**
   * Wraps whatever a call to `rpc` threw: a `ConnectError` keeps its code and
   * ErrorInfo reason; anything else becomes `Code.Unknown` with no reason.
   */
  static fromCall(rpc: string, error: unknown): DocketWorkerError {
    if (isDocketWorkerError(error)) return error;
    const connect = ConnectError.from(error);
    const reason = reasonOf(connect);
    const what = reason ?? Code[connect.code] ?? String(connect.code);
    return new DocketWorkerError(connect.code, reason, `${rpc} failed: ${what}`, { cause: error });
  }

  /** An error the SDK raises on its own (see {@link LocalWorkerErrorReason}). */
  static local(reason: LocalWorkerErrorReason, message: string): DocketWorkerError {
    const code = reason === 'INVALID_OPTION' ? Code.InvalidArgument : Code.FailedPrecondition;
    return new DocketWorkerError(code, reason, message);
  }
}

/** Whether `error` is a {@link DocketWorkerError} (judged by name, so across copies of the SDK). */
export function isDocketWorkerError(error: unknown): error is DocketWorkerError {
  return isNamedCallError(error, 'DocketWorkerError');
}

/**
 * The `google.rpc.ErrorInfo` reason of a failed call, or `undefined` when it
 * carried none (a transport failure, a deadline, an abort).
 */
export function reasonOf(error: unknown): string | undefined {
  if (isDocketWorkerError(error)) return error.reason;
  if (!(error instanceof ConnectError)) return undefined;
  return error.findDetails(ErrorInfoSchema)[0]?.reason;
}

/** The gRPC code of a failed call; `Code.Unknown` for anything that is not a call failure. */
export function codeOf(error: unknown): Code {
  if (isDocketWorkerError(error)) return error.code;
  if (error instanceof ConnectError) return error.code;
  return Code.Unknown;
}

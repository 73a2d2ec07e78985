import { Code, ConnectError } from '@connectrpc/connect';
import { errorInfoOf } from '@docket/client-kit';
import {
  ERROR_DOMAIN,
  GRPC_CODE,
  isDocketError,
  isErrorReason,
  type DocketError,
  type ErrorReason,
  type FieldViolation,
} from '@docket/contracts';
import { BadRequestSchema, ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import type { LogFields, Logger } from './logger.js';

/** Everything a Docket error carries on the wire. */
export interface DocketErrorParts {
  readonly code: Code;
  readonly reason: ErrorReason;
  readonly message: string;
  readonly metadata?: Readonly<Record<string, string>>;
  readonly fieldViolations?: readonly FieldViolation[];
}

/**
 * Builds the `ConnectError` for a Docket failure: the code and allowlisted
 * message, a `google.rpc.ErrorInfo {reason, domain: "docket", metadata}` and,
 * when there are field violations, a `google.rpc.BadRequest`. Connect puts
 * the details into `grpc-status-details-bin` for gRPC and gRPC-Web and into
 * the error JSON for the Connect protocol, so every protocol sees the same
 * failure.
 */
export function docketConnectError(parts: DocketErrorParts): ConnectError {
  const details: ConstructorParameters<typeof ConnectError>[3] = [
    {
      desc: ErrorInfoSchema,
      value: { reason: parts.reason, domain: ERROR_DOMAIN, metadata: { ...parts.metadata } },
    },
  ];
  const violations = parts.fieldViolations ?? [];
  if (violations.length > 0) {
    details.push({
      desc: BadRequestSchema,
      value: {
        fieldViolations: violations.map((v) => ({
          field: v.field,
          description: v.description,
          reason: v.reason ?? '',
        })),
      },
    });
  }
  return new ConnectError(wireSafeMessage(parts.message), parts.code, undefined, details);
}

/**
 * Connect percent-encodes `grpc-message` with `encodeURIComponent`, and
 * grpc-js decodes it with `decodeURI`, which leaves URI-reserved characters
 * encoded (`:` arrives as `%3A`). So that every client reads the same
 * message, those characters never appear in one: each becomes a space.
 * The precise rule stays intact in the BadRequest field violations.
 */
export function wireSafeMessage(message: string): string {
  return message.replace(/\s*[;,/?:@&=+$#]+\s*/g, ' ').trim();
}

/**
 * The reason and generic message given to a `ConnectError` that carries no
 * Docket `ErrorInfo`: failures raised by Connect itself (deadline, cancel,
 * unknown method, oversized message) or by a non-Docket upstream. The
 * reason is the code's own name when the vocabulary has it (`CANCELLED`,
 * `DEADLINE_EXCEEDED`, `NOT_FOUND`, `PERMISSION_DENIED`, `UNAUTHENTICATED`,
 * `UNIMPLEMENTED`, `UNAVAILABLE`, `INTERNAL`), otherwise `INTERNAL`. The
 * message becomes the code's name in words (`deadline exceeded`), because
 * nobody vetted the original.
 */
export function genericFailure(code: Code): { reason: ErrorReason; message: string } {
  const name = GRPC_CODE_NAMES.get(code);
  if (name === undefined || !isErrorReason(name) || name === 'INTERNAL') return INTERNAL;
  return { reason: name, message: name.toLowerCase().replaceAll('_', ' ') };
}

/** The reason {@link genericFailure} derives from a bare gRPC code. */
export function reasonForCode(code: Code): ErrorReason {
  return genericFailure(code).reason;
}

const GRPC_CODE_NAMES: ReadonlyMap<number, string> = new Map(
  Object.entries(GRPC_CODE).map(([name, number]) => [number, name]),
);

const INTERNAL = { reason: 'INTERNAL', message: 'internal error' } as const;

/** What a call whose client left (cancelled, reset, disconnected) is answered and logged as. */
const CLIENT_LEFT = { code: Code.Canceled, reason: 'CANCELLED', message: 'cancelled' } as const;

/** Node's errors for writing to a stream whose peer is already gone: a client that left, not a fault of ours. */
const PEER_GONE_CODES: ReadonlySet<string> = new Set([
  'ERR_STREAM_DESTROYED',
  'ERR_STREAM_WRITE_AFTER_END',
  'ERR_STREAM_PREMATURE_CLOSE',
  'ERR_HTTP2_INVALID_STREAM',
  'ERR_HTTP2_STREAM_CANCEL',
  'ERR_HTTP2_STREAM_ERROR',
]);

/**
 * Maps anything a handler or interceptor threw to the `ConnectError` a client
 * may see. This is the one place where that happens:
 *
 * - a `DocketError` becomes its code and message with `ErrorInfo` (reason,
 *   domain `docket`, metadata) and, for field errors, `BadRequest`;
 * - a `ConnectError` carrying a Docket `ErrorInfo` (an upstream Docket
 *   service's error) keeps its code, message and details verbatim, so reason
 *   and field violations cross hops unchanged; its headers and trailers
 *   (`metadata`) are dropped because Connect would copy them into this
 *   response (an upstream `content-type` would corrupt a Connect reply);
 * - any other `ConnectError` keeps its code and gets a reason derived from it
 *   and a generic message ({@link genericFailure});
 * - an `AbortError` becomes its cause when that is a `ConnectError`
 *   (deadline, shutdown), otherwise `CANCELLED`; so does Node's refusal to
 *   write to a stream whose client has gone (`ERR_STREAM_DESTROYED`, ...);
 * - anything else (a bug, a pg error) becomes `INTERNAL` "internal error";
 *   `logger` records only its `name` and `code` properties, never its
 *   message or stack, which can contain SQL or connection strings.
 *
 * @param fields added to the log line of an unexpected error (rpc, request id)
 */
export function toConnectError(error: unknown, logger: Logger, fields?: LogFields): ConnectError {
  if (isDocketError(error)) return connectErrorOfDocketError(error);
  if (error instanceof ConnectError) {
    if (errorInfoOf(error)?.domain === ERROR_DOMAIN) {
      const passed = new ConnectError(error.rawMessage, error.code);
      passed.details = error.details;
      return passed;
    }
    // Connect wraps Node's failure to write a response frame (the client
    // reset the stream or the connection died) as INTERNAL with the Node
    // error as its cause: a client that left, not a fault of ours.
    const cause = error.cause;
    if (error.code === Code.Internal && cause !== undefined && PEER_GONE_CODES.has(String(codeOf(cause)))) {
      return clientLeftError();
    }
    if (error.code === Code.Internal && cause !== undefined) {
      logger.error('unexpected error', { ...fields, error_name: nameOf(cause), error_code: codeOf(cause) });
    }
    return docketConnectError({ code: error.code, ...genericFailure(error.code) });
  }
  if (error instanceof Error && error.name === 'AbortError') {
    // Node's abortable APIs reject with an AbortError whose cause is the
    // signal's reason: Connect's DEADLINE_EXCEEDED, or UNAVAILABLE when
    // the grace period of a shutdown ran out.
    if (error.cause instanceof ConnectError) return toConnectError(error.cause, logger, fields);
    return clientLeftError();
  }
  if (PEER_GONE_CODES.has(String(codeOf(error)))) {
    // Writing a frame to a stream whose client has already gone (cancelled, disconnected): nobody to answer.
    return clientLeftError();
  }
  logger.error('unexpected error', { ...fields, error_name: nameOf(error), error_code: codeOf(error) });
  return docketConnectError({ code: Code.Internal, ...INTERNAL });
}

/**
 * Whether a call's signal aborted because its client left: it cancelled,
 * or its HTTP/2 stream or connection was reset, whatever the reset code (a
 * client process that dies leaves its streams reset with INTERNAL_ERROR,
 * which Connect reads as INTERNAL), rather than because of its deadline
 * (DEADLINE_EXCEEDED) or the server's shutdown (UNAVAILABLE).
 */
export function clientLeft(signal: AbortSignal): boolean {
  if (!signal.aborted) return false;
  const reason: unknown = signal.reason;
  return !(reason instanceof ConnectError && (reason.code === Code.DeadlineExceeded || reason.code === Code.Unavailable));
}

/** The error of a call whose client left: CANCELLED (nobody reads it; the log line says so). */
export function clientLeftError(): ConnectError {
  return docketConnectError(CLIENT_LEFT);
}

/** The one reading of a Docket error's ErrorInfo, which lives in `@docket/client-kit` (shared with the callers), re-exported for the services. */
export { errorInfoOf };

/** The `google.rpc.BadRequest` field violations of an error; empty when there are none. */
export function fieldViolationsOf(error: ConnectError): FieldViolation[] {
  return error.findDetails(BadRequestSchema).flatMap((badRequest) =>
    badRequest.fieldViolations.map((v) => ({
      field: v.field,
      description: v.description,
      ...(v.reason ? { reason: v.reason } : {}),
    })),
  );
}

function nameOf(error: unknown): string {
  if (error instanceof Error) return error.name;
  return error === null ? 'null' : typeof error;
}

function codeOf(error: unknown): string | number | undefined {
  if (typeof error !== 'object' || error === null || !('code' in error)) return undefined;
  const code = error.code;
  if (typeof code === 'number') return code;
  return typeof code === 'string' ? code.slice(0, 64) : undefined;
}

/** A Docket error as it goes on the wire: its code, reason, message, metadata and field violations, nothing else. */
export function connectErrorOfDocketError(error: DocketError): ConnectError {
  return docketConnectError({
    code: error.grpcCode as Code,
    reason: error.reason,
    message: error.message,
    metadata: error.metadata,
    fieldViolations: error.fieldViolations,
  });
}

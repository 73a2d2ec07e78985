import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { DebugInfoSchema, ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import { isRetryableFailure } from './retryable-failure.js';

function withReason(code: Code, reason: string, metadata: Record<string, string> = {}): ConnectError {
  return new ConnectError('refused', code, undefined, [{ desc: ErrorInfoSchema, value: { reason, domain: 'docket', metadata } }]);
}

function nodeError(code: string): Error {
  return Object.assign(new Error(`socket ${code}`), { code });
}

/** An SDK error as `DocketClientError.fromCall` / `DocketWorkerError.fromCall` make one: the call's code, its failure as the cause. */
function sdkError(name: 'DocketClientError' | 'DocketWorkerError', code: Code, cause?: unknown): Error {
  return Object.assign(new Error(`${name} ${Code[code]}`, cause === undefined ? undefined : { cause }), { name, code, reason: undefined });
}

describe('isRetryableFailure, lost-answer (the default)', () => {
  it.each([
    ['UNAVAILABLE', new ConnectError('no server', Code.Unavailable)],
    ['UNAVAILABLE from the service', withReason(Code.Unavailable, 'UNAVAILABLE')],
    ['DEADLINE_EXCEEDED', new ConnectError('slow', Code.DeadlineExceeded)],
    ['INTERNAL without details (a broken stream)', new ConnectError('http/2 stream closed with error code INTERNAL_ERROR', Code.Internal)],
    ['ABORTED caused by ECONNRESET', new ConnectError('reset', Code.Aborted, undefined, undefined, nodeError('ECONNRESET'))],
    ['UNKNOWN caused by an HTTP/2 session error', new ConnectError('h2', Code.Unknown, undefined, undefined, nodeError('ERR_HTTP2_SESSION_ERROR'))],
    ['UNKNOWN with a reset deeper in its cause chain', new ConnectError('h2', Code.Unknown, undefined, undefined, new Error('write failed', { cause: nodeError('EPIPE') }))],
    // What connect-node answers for every call in flight when the server process dies (kill -9).
    ['CANCELLED without details (a stream cut by a dead server)', new ConnectError('http/2 stream closed with error code CANCEL (0x8)', Code.Canceled)],
    ['CANCELLED caused by a reset', new ConnectError('gone', Code.Canceled, undefined, undefined, nodeError('ECONNRESET'))],
    ['an SDK error wrapping UNAVAILABLE', sdkError('DocketClientError', Code.Unavailable, new ConnectError('x', Code.Unavailable))],
    ['a worker SDK error wrapping a broken stream', sdkError('DocketWorkerError', Code.Internal, new ConnectError('x', Code.Internal))],
  ])('retries %s', (_, error) => {
    expect(isRetryableFailure(error)).toBe(true);
    expect(isRetryableFailure(error, { scope: 'lost-answer' })).toBe(true);
  });

  it.each([
    ['INVALID_ARGUMENT', withReason(Code.InvalidArgument, 'INVALID_FIELD')],
    ['ALREADY_EXISTS / IDEMPOTENCY_CONFLICT', withReason(Code.AlreadyExists, 'IDEMPOTENCY_CONFLICT')],
    ['ALREADY_EXISTS / APPROVAL_SPENT', withReason(Code.AlreadyExists, 'APPROVAL_SPENT')],
    ['NOT_FOUND', withReason(Code.NotFound, 'NOT_FOUND')],
    ['FAILED_PRECONDITION', withReason(Code.FailedPrecondition, 'ILLEGAL_TRANSITION')],
    ['ABORTED / REVISION_MISMATCH, even with a reset in its cause', new ConnectError('stale', Code.Aborted, undefined, [{ desc: ErrorInfoSchema, value: { reason: 'REVISION_MISMATCH', domain: 'docket' } }], nodeError('ECONNRESET'))],
    ['INTERNAL decided by the service (ErrorInfo)', withReason(Code.Internal, 'INTERNAL')],
    ['INTERNAL with any other detail', new ConnectError('x', Code.Internal, undefined, [{ desc: DebugInfoSchema, value: { detail: 'stack' } }])],
    ['DATA_LOSS', withReason(Code.DataLoss, 'JOURNAL_CORRUPT')],
    ['UNAUTHENTICATED', withReason(Code.Unauthenticated, 'UNAUTHENTICATED')],
    ['PERMISSION_DENIED', withReason(Code.PermissionDenied, 'PERMISSION_DENIED')],
    ['CANCELLED with details', new ConnectError('stop', Code.Canceled, undefined, [{ desc: ErrorInfoSchema, value: { reason: 'CANCELLED', domain: 'docket' } }])],
    ['UNKNOWN without a reset', new ConnectError('?', Code.Unknown)],
    ['RESOURCE_EXHAUSTED', new ConnectError('big', Code.ResourceExhausted)],
    ['a plain Error', new Error('boom')],
    ['a Node reset that is not a call failure', nodeError('ECONNRESET')],
    ['an SDK error wrapping a refusal', sdkError('DocketClientError', Code.AlreadyExists, withReason(Code.AlreadyExists, 'IDEMPOTENCY_CONFLICT'))],
    ['an SDK error of its own (no call failure under it), whatever its code', sdkError('DocketClientError', Code.Unavailable)],
  ])('does not retry %s', (_, error) => {
    expect(isRetryableFailure(error)).toBe(false);
  });
});

describe('isRetryableFailure, possibly-applied', () => {
  const possiblyApplied = (error: unknown): boolean => isRetryableFailure(error, { scope: 'possibly-applied' });

  it.each([
    ['UNAVAILABLE', new ConnectError('no server', Code.Unavailable)],
    ['DEADLINE_EXCEEDED', new ConnectError('slow', Code.DeadlineExceeded)],
    ['INTERNAL decided by the service (ErrorInfo)', withReason(Code.Internal, 'INTERNAL')],
    ['UNKNOWN without a reset', new ConnectError('?', Code.Unknown)],
    ['RESOURCE_EXHAUSTED', new ConnectError('big', Code.ResourceExhausted)],
    ['CANCELLED with details', new ConnectError('stop', Code.Canceled, undefined, [{ desc: ErrorInfoSchema, value: { reason: 'CANCELLED', domain: 'docket' } }])],
    ['a plain Error (judged UNKNOWN)', new Error('boom')],
    ['an SDK error with a code that may have been applied', sdkError('DocketWorkerError', Code.Internal)],
  ])('retries %s', (_, error) => {
    expect(possiblyApplied(error)).toBe(true);
  });

  it.each([
    ['INVALID_ARGUMENT', withReason(Code.InvalidArgument, 'INVALID_FIELD')],
    ['NOT_FOUND', withReason(Code.NotFound, 'NOT_FOUND')],
    ['ALREADY_EXISTS', withReason(Code.AlreadyExists, 'IDEMPOTENCY_CONFLICT')],
    ['FAILED_PRECONDITION / STALE_AUTHORITY', withReason(Code.FailedPrecondition, 'STALE_AUTHORITY')],
    ['PERMISSION_DENIED', withReason(Code.PermissionDenied, 'PERMISSION_DENIED')],
    ['UNAUTHENTICATED', withReason(Code.Unauthenticated, 'UNAUTHENTICATED')],
    // The code alone decides: no reading of the cause chain in this scope.
    ['ABORTED, even caused by a reset', new ConnectError('reset', Code.Aborted, undefined, undefined, nodeError('ECONNRESET'))],
    ['an SDK error judged by its own code (a local refusal)', sdkError('DocketWorkerError', Code.FailedPrecondition)],
  ])('does not retry %s', (_, error) => {
    expect(possiblyApplied(error)).toBe(false);
  });
});

describe('isRetryableFailure, undecided', () => {
  const undecided = (error: unknown): boolean => isRetryableFailure(error, { scope: 'undecided' });

  it.each([
    ['UNAVAILABLE (a refused connection)', new ConnectError('connect ECONNREFUSED', Code.Unavailable)],
    ['UNAVAILABLE decided by the service (draining, its database unreachable)', withReason(Code.Unavailable, 'UNAVAILABLE')],
    ['DEADLINE_EXCEEDED (a try outlived its deadline)', new ConnectError('deadline', Code.DeadlineExceeded)],
    ['DEADLINE_EXCEEDED decided by the service', withReason(Code.DeadlineExceeded, 'DEADLINE_EXCEEDED')],
    ['INVALID_ARGUMENT without ErrorInfo (a message cut off mid-envelope)', new ConnectError('protocol error: incomplete envelope', Code.InvalidArgument)],
    ['INTERNAL without ErrorInfo (a reset stream)', new ConnectError('stream reset', Code.Internal)],
    ['UNKNOWN without a reset', new ConnectError('?', Code.Unknown)],
    ['CANCELLED without details (a stream cut by a dead server)', new ConnectError('http/2 stream closed with error code CANCEL (0x8)', Code.Canceled)],
    ['INTERNAL with details but no ErrorInfo', new ConnectError('x', Code.Internal, undefined, [{ desc: DebugInfoSchema, value: { detail: 'stack' } }])],
    ['NOT_FOUND with the ErrorInfo of another domain (a proxy, not Docket)', new ConnectError('no route', Code.NotFound, undefined, [{ desc: ErrorInfoSchema, value: { reason: 'NOT_FOUND', domain: 'envoy' } }])],
    ['an SDK error wrapping a failure without ErrorInfo', sdkError('DocketClientError', Code.Internal, new ConnectError('x', Code.Internal))],
  ])('retries %s', (_, error) => {
    expect(undecided(error)).toBe(true);
  });

  it.each([
    ['NOT_FOUND', withReason(Code.NotFound, 'NOT_FOUND')],
    ['OUT_OF_RANGE', withReason(Code.OutOfRange, 'CURSOR_BEYOND_LATEST')],
    ['INVALID_ARGUMENT decided by the service', withReason(Code.InvalidArgument, 'CURSOR_EXPIRED')],
    ['DATA_LOSS', withReason(Code.DataLoss, 'JOURNAL_CORRUPT')],
    ['INTERNAL decided by the service (ErrorInfo)', withReason(Code.Internal, 'INTERNAL')],
    ['PERMISSION_DENIED', withReason(Code.PermissionDenied, 'PERMISSION_DENIED')],
    ['ABORTED / REVISION_MISMATCH, even with a reset in its cause', new ConnectError('stale', Code.Aborted, undefined, [{ desc: ErrorInfoSchema, value: { reason: 'REVISION_MISMATCH', domain: 'docket' } }], nodeError('ECONNRESET'))],
    ['a plain Error (a bug, not a call failure)', new Error('a bug')],
    ['a Node reset that is not a call failure', nodeError('ECONNRESET')],
    ['an SDK error wrapping a decided failure', sdkError('DocketClientError', Code.NotFound, withReason(Code.NotFound, 'NOT_FOUND'))],
  ])('does not retry %s', (_, error) => {
    expect(undecided(error)).toBe(false);
  });
});

import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { DebugInfoSchema, ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import { DocketClientError } from './docket-client-error.js';
import { callWithRetry, isRetryableFailure, type RetryPolicy } from './retry-policy.js';

function withReason(code: Code, reason: string, metadata: Record<string, string> = {}): ConnectError {
  return new ConnectError('refused', code, undefined, [{ desc: ErrorInfoSchema, value: { reason, domain: 'docket', metadata } }]);
}

function nodeError(code: string): Error {
  return Object.assign(new Error(`socket ${code}`), { code });
}

describe('isRetryableFailure', () => {
  it.each([
    ['UNAVAILABLE', new ConnectError('no server', Code.Unavailable)],
    ['UNAVAILABLE from the service', withReason(Code.Unavailable, 'UNAVAILABLE')],
    ['DEADLINE_EXCEEDED', new ConnectError('slow', Code.DeadlineExceeded)],
    ['INTERNAL without details (a broken stream)', new ConnectError('http/2 stream closed with error code INTERNAL_ERROR', Code.Internal)],
    ['ABORTED caused by ECONNRESET', new ConnectError('reset', Code.Aborted, undefined, undefined, nodeError('ECONNRESET'))],
    ['UNKNOWN caused by an HTTP/2 session error', new ConnectError('h2', Code.Unknown, undefined, undefined, nodeError('ERR_HTTP2_SESSION_ERROR'))],
    // What connect-node answers for every call in flight when the server process dies (kill -9).
    ['CANCELLED without details (a stream cut by a dead server)', new ConnectError('http/2 stream closed with error code CANCEL (0x8)', Code.Canceled)],
    ['CANCELLED caused by a reset', new ConnectError('gone', Code.Canceled, undefined, undefined, nodeError('ECONNRESET'))],
  ])('retries %s', (_, error) => {
    expect(isRetryableFailure(error)).toBe(true);
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
    ['a local INVALID_FIELD', DocketClientError.local('INVALID_FIELD', 'bad key')],
    ['a local JOURNAL_CORRUPT', DocketClientError.local('JOURNAL_CORRUPT', 'broken')],
  ])('does not retry %s', (_, error) => {
    expect(isRetryableFailure(error)).toBe(false);
  });

  it('judges a DocketClientError by the call failure it wraps', () => {
    expect(isRetryableFailure(DocketClientError.fromCall('SubmitJob', new ConnectError('x', Code.Unavailable)))).toBe(true);
    expect(isRetryableFailure(DocketClientError.fromCall('SubmitJob', withReason(Code.AlreadyExists, 'IDEMPOTENCY_CONFLICT')))).toBe(false);
  });
});

const FAST: RetryPolicy = { tries: 6, initialDelayMs: 1, maxDelayMs: 4, perTryTimeoutMs: 1_000 };

describe('callWithRetry', () => {
  it('retries a call that may have succeeded until it answers, at most `tries` times', async () => {
    let calls = 0;
    const answer = await callWithRetry(async () => {
      calls += 1;
      if (calls < 4) throw new ConnectError('down', Code.Unavailable);
      return 'ok';
    }, { policy: FAST, rpc: 'SubmitJob' });
    expect(answer).toBe('ok');
    expect(calls).toBe(4);

    calls = 0;
    const failure = await callWithRetry(async () => {
      calls += 1;
      throw new ConnectError('down', Code.Unavailable);
    }, { policy: FAST, rpc: 'SubmitJob' }).catch((error: unknown) => error);
    expect(calls).toBe(6);
    expect(failure).toMatchObject({ name: 'DocketClientError', code: Code.Unavailable, reason: undefined });
  });

  it('throws a refusal at once, decoded, with the key and the token scrubbed from the message', async () => {
    const key = 'my-secret-key-0123456789';
    let calls = 0;
    const failure = await callWithRetry(async () => {
      calls += 1;
      throw new ConnectError(`key ${key} bound to another request; token tok.en.value`, Code.AlreadyExists, undefined, [
        { desc: ErrorInfoSchema, value: { reason: 'IDEMPOTENCY_CONFLICT', domain: 'docket', metadata: { rpc: 'SubmitJob', echoed: key } } },
      ]);
    }, { policy: FAST, rpc: 'SubmitJob', secrets: ['tok.en.value', key] }).catch((error: unknown) => error as DocketClientError);
    expect(calls).toBe(1);
    expect(failure).toMatchObject({ code: Code.AlreadyExists, reason: 'IDEMPOTENCY_CONFLICT', metadata: { rpc: 'SubmitJob', echoed: '<redacted>' } });
    expect(failure.message).not.toContain(key);
    expect(failure.message).not.toContain('tok.en.value');
    expect(failure.message).toContain('IDEMPOTENCY_CONFLICT');
  });

  it('uses full-jitter backoff: a uniform delay up to a ceiling that doubles per try', async () => {
    const waits: number[] = [];
    let last = Date.now();
    let calls = 0;
    await callWithRetry(async () => {
      const now = Date.now();
      if (calls > 0) waits.push(now - last);
      last = now;
      calls += 1;
      if (calls < 4) throw new ConnectError('down', Code.Unavailable);
    }, { policy: { ...FAST, initialDelayMs: 40, maxDelayMs: 1_000 }, rpc: 'SubmitJob', random: () => 0.999 });
    // Ceilings 40, 80, 160 ms at the top of the jitter range.
    expect(waits).toHaveLength(3);
    expect(waits[0]).toBeGreaterThanOrEqual(35);
    expect(waits[1]).toBeGreaterThanOrEqual(75);
    expect(waits[2]).toBeGreaterThanOrEqual(155);
    expect(waits[2]).toBeLessThan(400);
  });

  it('stops with CANCELLED once the caller aborts, without another try', async () => {
    const controller = new AbortController();
    let calls = 0;
    const failure = await callWithRetry(async () => {
      calls += 1;
      controller.abort();
      throw new ConnectError('down', Code.Unavailable);
    }, { policy: FAST, rpc: 'SubmitJob', signal: controller.signal }).catch((error: unknown) => error);
    expect(calls).toBe(1);
    expect(failure).toMatchObject({ code: Code.Canceled, reason: 'CANCELLED' });
  });
});

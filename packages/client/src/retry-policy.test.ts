import { Code, ConnectError } from '@connectrpc/connect';
import { callWithRetry } from '@docket/client-kit';
import { describe, expect, it } from 'vitest';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import { DocketClientError } from './docket-client-error.js';
import { isRetryableFailure } from './portable.js';
import { clientRetry, type RetryPolicy } from './retry-policy.js';

/*
 * The retry itself (which failures, the backoff loop) is `@docket/client-kit`'s
 * and tested there; these are the client's own parts of it.
 */

function withReason(code: Code, reason: string, metadata: Record<string, string> = {}): ConnectError {
  return new ConnectError('refused', code, undefined, [{ desc: ErrorInfoSchema, value: { reason, domain: 'docket', metadata } }]);
}

describe('isRetryableFailure', () => {
  it('judges a DocketClientError by the call failure it wraps, and never retries a local one', () => {
    expect(isRetryableFailure(DocketClientError.fromCall('SubmitJob', new ConnectError('x', Code.Unavailable)))).toBe(true);
    expect(isRetryableFailure(DocketClientError.fromCall('SubmitJob', withReason(Code.AlreadyExists, 'IDEMPOTENCY_CONFLICT')))).toBe(false);
    expect(isRetryableFailure(DocketClientError.local('INVALID_FIELD', 'bad key'))).toBe(false);
    expect(isRetryableFailure(DocketClientError.local('JOURNAL_CORRUPT', 'broken'))).toBe(false);
  });
});

const FAST: RetryPolicy = { tries: 6, initialDelayMs: 1, maxDelayMs: 4, perTryTimeoutMs: 1_000 };

describe('clientRetry', () => {
  it('throws the last failure as a DocketClientError once the policy runs out of tries', async () => {
    let calls = 0;
    const failure = await callWithRetry(async () => {
      calls += 1;
      throw new ConnectError('down', Code.Unavailable);
    }, clientRetry({ policy: FAST, rpc: 'SubmitJob' })).catch((error: unknown) => error);
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
    }, clientRetry({ policy: FAST, rpc: 'SubmitJob', secrets: ['tok.en.value', key] })).catch((error: unknown) => error as DocketClientError);
    expect(calls).toBe(1);
    expect(failure).toMatchObject({ code: Code.AlreadyExists, reason: 'IDEMPOTENCY_CONFLICT', metadata: { rpc: 'SubmitJob', echoed: '<redacted>' } });
    expect(failure.message).not.toContain(key);
    expect(failure.message).not.toContain('tok.en.value');
    expect(failure.message).toContain('IDEMPOTENCY_CONFLICT');
  });

  it('gives each try the per-try deadline of the policy', async () => {
    let timeoutMs: number | undefined;
    await callWithRetry(async (options) => (timeoutMs = options.timeoutMs), clientRetry({ policy: FAST, rpc: 'GetJob' }));
    expect(timeoutMs).toBe(1_000);
  });

  it('stops with CANCELLED once the caller aborts, without another try', async () => {
    const controller = new AbortController();
    let calls = 0;
    const failure = await callWithRetry(async () => {
      calls += 1;
      controller.abort();
      throw new ConnectError('down', Code.Unavailable);
    }, clientRetry({ policy: FAST, rpc: 'SubmitJob', signal: controller.signal })).catch((error: unknown) => error);
    expect(calls).toBe(1);
    expect(failure).toMatchObject({ name: 'DocketClientError', code: Code.Canceled, reason: 'CANCELLED' });
  });
});

import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { rpcLogLevel, SLOW_CALL_MS } from './rpc-logging-interceptor.js';

describe('rpcLogLevel', () => {
  it.each([
    ['a fast success', 0, 5, 'debug'],
    ['a success of exactly the slow threshold', 0, SLOW_CALL_MS, 'debug'],
    ['a slow unary success (a long-poll is slow on purpose)', 0, SLOW_CALL_MS + 1, 'info'],
    ['a long stream that ended well', 0, undefined, 'debug'],
    ['a refused call', Code.InvalidArgument, 1, 'info'],
    ['a cancelled stream', Code.Canceled, undefined, 'info'],
    ['a slow failure', Code.DeadlineExceeded, 5_000, 'info'],
    ['an internal error', Code.Internal, 1, 'error'],
    ['an unknown error', Code.Unknown, 1, 'error'],
    ['data loss', Code.DataLoss, undefined, 'error'],
  ] as const)('%s: %s', (_what, code, latencyMs, level) => {
    expect(rpcLogLevel(code, latencyMs)).toBe(level);
  });
});

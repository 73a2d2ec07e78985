import { Code, ConnectError } from '@connectrpc/connect';
import { DocketError, invalidField } from '@docket/contracts';
import { describe, expect, it } from 'vitest';
import { docketConnectError, errorInfoOf, fieldViolationsOf, reasonForCode, toConnectError, wireSafeMessage } from './error-mapping.js';
import { createLogger } from './logger.js';

function capture() {
  const lines: string[] = [];
  return { lines, logger: createLogger('test', (line) => lines.push(line)) };
}

describe('toConnectError', () => {
  it('maps a DocketError to its code with ErrorInfo and BadRequest', () => {
    const { logger, lines } = capture();
    const error = toConnectError(invalidField('queue', 'must match the queue name pattern'), logger);
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe('invalid queue');
    expect(errorInfoOf(error)).toMatchObject({ reason: 'INVALID_FIELD', domain: 'docket', metadata: {} });
    expect(fieldViolationsOf(error)).toEqual([{ field: 'queue', description: 'must match the queue name pattern' }]);
    expect(lines).toEqual([]);
  });

  it('adds no BadRequest when there are no field violations', () => {
    const error = toConnectError(new DocketError('NOT_FOUND', 'job not found'), capture().logger);
    expect(error.details).toHaveLength(1);
    expect(fieldViolationsOf(error)).toEqual([]);
  });

  it('passes an upstream Docket error through with its details but without its transport metadata', () => {
    const upstream = docketConnectError({ code: Code.Aborted, reason: 'REVISION_MISMATCH', message: 'revision mismatch' });
    const received = new ConnectError(upstream.rawMessage, upstream.code, { 'content-type': 'application/grpc' });
    received.details = upstream.details;
    const passed = toConnectError(received, capture().logger);
    expect(passed.code).toBe(Code.Aborted);
    expect(passed.rawMessage).toBe('revision mismatch');
    expect(errorInfoOf(passed)?.reason).toBe('REVISION_MISMATCH');
    expect([...passed.metadata.keys()]).toEqual([]);
  });

  it('gives a bare ConnectError a reason from its code and a generic message', () => {
    const { logger } = capture();
    const cases: [Code, string, string][] = [
      [Code.DeadlineExceeded, 'DEADLINE_EXCEEDED', 'deadline exceeded'],
      [Code.Canceled, 'CANCELLED', 'cancelled'],
      [Code.Unimplemented, 'UNIMPLEMENTED', 'unimplemented'],
      [Code.Unavailable, 'UNAVAILABLE', 'unavailable'],
      [Code.ResourceExhausted, 'INTERNAL', 'internal error'],
      [Code.Unknown, 'INTERNAL', 'internal error'],
    ];
    for (const [code, reason, message] of cases) {
      const mapped = toConnectError(new ConnectError('connect ECONNREFUSED 10.0.0.7:5432', code), logger);
      expect([mapped.code, errorInfoOf(mapped)?.reason, mapped.rawMessage]).toEqual([code, reason, message]);
      expect(reasonForCode(code)).toBe(reason);
    }
  });

  it('maps an AbortError to the ConnectError that caused it, or to CANCELLED', () => {
    const { logger } = capture();
    const byDeadline = new Error('The operation was aborted', { cause: new ConnectError('timed out', Code.DeadlineExceeded) });
    byDeadline.name = 'AbortError';
    expect(toConnectError(byDeadline, logger).code).toBe(Code.DeadlineExceeded);
    const plain = new Error('The operation was aborted');
    plain.name = 'AbortError';
    expect(toConnectError(plain, logger).code).toBe(Code.Canceled);
  });

  it('maps a write to a stream whose client is gone to CANCELLED, without an error log line', async () => {
    const { logger, lines } = capture();
    const { PassThrough } = await import('node:stream');
    const stream = new PassThrough();
    stream.destroy();
    const failure = await new Promise<unknown>((resolve) => stream.write('frame', resolve));
    expect((failure as { code?: string }).code).toBe('ERR_STREAM_DESTROYED');
    expect(toConnectError(failure, logger).code).toBe(Code.Canceled);
    expect(lines).toHaveLength(0);
  });

  it('treats the INTERNAL Connect makes of a response frame the client reset as CANCELLED, and logs the cause of any other', () => {
    // What connect-node's connectErrorFromNodeReason makes of a failed response write: INTERNAL, the Node error as its cause.
    const connectErrorFromNodeReason = (reason: Error) => new ConnectError(reason.message, Code.Internal, undefined, undefined, reason);
    const { logger, lines } = capture();
    const reset = Object.assign(new Error('Stream closed with error code NGHTTP2_CANCEL'), { code: 'ERR_HTTP2_STREAM_ERROR' });
    const wrapped = connectErrorFromNodeReason(reset);
    expect(wrapped.code).toBe(Code.Internal);
    expect(toConnectError(wrapped, logger).code).toBe(Code.Canceled);
    expect(lines).toHaveLength(0);
    const odd = connectErrorFromNodeReason(Object.assign(new Error('something else at /srv/secret'), { code: 'ERR_ODD' }));
    expect(toConnectError(odd, logger, { rpc: '/x.v1.X/Y' }).code).toBe(Code.Internal);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('"error_code":"ERR_ODD"');
    expect(lines[0]).not.toContain('/srv/secret');
  });

  it('turns anything else into INTERNAL and logs only its name and code', () => {
    const { logger, lines } = capture();
    const pgError = Object.assign(new Error('duplicate key value violates "jobs_pkey" password=hunter2'), {
      code: '23505',
      detail: 'Key (id)=(job_1) already exists.',
    });
    const mapped = toConnectError(pgError, logger, { rpc: '/x.v1.X/Y' });
    expect([mapped.code, mapped.rawMessage, errorInfoOf(mapped)?.reason]).toEqual([Code.Internal, 'internal error', 'INTERNAL']);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'error', error_name: 'Error', error_code: '23505', rpc: '/x.v1.X/Y' });
    expect(lines[0]).not.toMatch(/hunter2|duplicate|job_1/);
    expect(toConnectError('a string', logger).rawMessage).toBe('internal error');
  });
});

describe('wireSafeMessage', () => {
  it('removes the URI-reserved characters that grpc-js would leave percent-encoded', () => {
    expect(wireSafeMessage('a: b, c/d; e')).toBe('a b c d e');
    expect(wireSafeMessage('job not found')).toBe('job not found');
  });
});

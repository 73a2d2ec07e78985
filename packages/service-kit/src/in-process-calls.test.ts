import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { mintToken } from '@docket/auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorInfoOf, fieldViolationsOf } from './error-mapping.js';
import { answerInProcess, inProcessTransportOf } from './in-process-calls.js';
import { createServiceTransport } from './service-transport.js';
import { ProbeService } from './testing/probe-service.js';
import { PROBE_SECRET, PROBE_VIOLATIONS, SECRET_BUG_MESSAGE, startProbeServer, type ProbeHarness } from './testing/probe-server.js';

/*
 * The state service of the one process, as its front services call it: a
 * probe server that accepts only the `service` role answers in memory at
 * an address where nothing listens, so a call that succeeds cannot have
 * crossed a socket.
 */
const NOWHERE = 'http://127.0.0.1:9';
let upstream: ProbeHarness;
let stopAnswering: () => void;
let serviceToken: string;
beforeAll(async () => {
  upstream = await startProbeServer({ authenticate: { secret: PROBE_SECRET, allowedRoles: ['service'] } });
  stopAnswering = answerInProcess({ ...upstream.server.inProcess, url: NOWHERE });
  serviceToken = await mintToken({ secret: PROBE_SECRET, subject: 'front', role: 'service', ttlSeconds: 600 });
});
afterAll(async () => {
  stopAnswering();
  await upstream.server.shutdown(500);
});

const probe = (token = serviceToken) => createClient(ProbeService, createServiceTransport({ baseUrl: NOWHERE, token, defaultDeadlineMs: 2_000 }));

describe('calls to a server of this process', () => {
  it('reach its handlers in memory, with the caller authenticated by its service token', async () => {
    expect((await probe().echo({ text: 'who' })).text).toBe('front/service');
    expect(upstream.rpcLines().at(-1)).toMatchObject({ rpc: '/docket.testing.v1.ProbeService/Echo', code: 'ok' });
  });

  it('go through its authentication: a token it does not accept is refused', async () => {
    const userToken = await upstream.token('user');
    const error = await probe(userToken).echo({ text: 'who' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.PermissionDenied);
  });

  it('get its typed errors with their details, and never a bug’s message', async () => {
    const typed = (await probe().echo({ text: 'docket-error' }).catch((caught: unknown) => caught)) as ConnectError;
    expect(typed.code).toBe(Code.InvalidArgument);
    expect(errorInfoOf(typed)?.reason).toBe('INVALID_FIELD');
    expect(fieldViolationsOf(typed)).toEqual(PROBE_VIOLATIONS);
    const bug = (await probe().echo({ text: 'bug' }).catch((caught: unknown) => caught)) as ConnectError;
    expect(bug.code).toBe(Code.Internal);
    expect(bug.message).not.toContain(SECRET_BUG_MESSAGE);
  });

  it('carry the default deadline, and a caller’s own', async () => {
    expect(Number((await probe().echo({ text: 'deadline' })).text)).toBeGreaterThan(1_000);
    expect(Number((await probe().echo({ text: 'deadline' }, { timeoutMs: 300 })).text)).toBeLessThanOrEqual(300);
    const late = (await probe().echo({ text: 'sleep:2000' }, { timeoutMs: 100 }).catch((caught: unknown) => caught)) as ConnectError;
    expect(late.code).toBe(Code.DeadlineExceeded);
  });

  it('stop when the caller cancels, the handler seeing its signal abort', async () => {
    const controller = new AbortController();
    const call = probe().echo({ text: 'sleep:5000' }, { signal: controller.signal }).catch((caught: unknown) => caught);
    setTimeout(() => controller.abort(), 50);
    expect(((await call) as ConnectError).code).toBe(Code.Canceled);
    // The handler's sleep ended with its signal: the server logged the call as cancelled, not as answered 5 s later.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(upstream.rpcLines().at(-1)).toMatchObject({ rpc: '/docket.testing.v1.ProbeService/Echo', code: 'canceled' });
  });

  it('stream, and end a stream with the error its handler threw', async () => {
    const replies: number[] = [];
    for await (const reply of probe().count({ text: 'n', count: 3 })) replies.push(reply.sequence);
    expect(replies).toEqual([1, 2, 3]);
    const failing: number[] = [];
    const error = await (async () => {
      for await (const reply of probe().count({ text: 'fail-mid', count: 3 })) failing.push(reply.sequence);
    })().catch((caught: unknown) => caught);
    expect(failing).toEqual([1]);
    expect(errorInfoOf(error as ConnectError)?.reason).toBe('NOT_FOUND');
  });

  it('are only in memory for a server that answers so: another URL gets no transport', () => {
    expect(inProcessTransportOf(upstream.url, serviceToken)).toBeUndefined();
    expect(inProcessTransportOf(NOWHERE, serviceToken)).toBeDefined();
  });
});

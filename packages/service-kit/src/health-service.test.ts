import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import {
  Health,
  HealthCheckResponse_ServingStatus as Status,
} from '@docket/proto/grpc/health/v1/health_pb.js';
import { afterEach, describe, expect, it } from 'vitest';
import { errorInfoOf } from './error-mapping.js';
import { ProbeService } from './testing/probe-service.js';
import { startProbeServer, type ProbeHarness } from './testing/probe-server.js';

let harness: ProbeHarness | undefined;
afterEach(async () => {
  await harness?.server.shutdown(1_000);
  harness = undefined;
});

async function healthClient() {
  harness = await startProbeServer();
  return createClient(Health, createGrpcTransport({ baseUrl: harness.url }));
}

describe('grpc.health.v1.Health', () => {
  it('is SERVING for the server and each served service, without a token', async () => {
    const health = await healthClient();
    expect((await health.check({ service: '' })).status).toBe(Status.SERVING);
    expect((await health.check({ service: ProbeService.typeName })).status).toBe(Status.SERVING);
  });

  it('answers NOT_FOUND with reason NOT_FOUND for an unknown service', async () => {
    const health = await healthClient();
    const error = await health.check({ service: 'docket.nope.v1.Nope' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.NotFound);
    expect(errorInfoOf(error as ConnectError)?.reason).toBe('NOT_FOUND');
  });

  it('reports a service set NOT_SERVING, and the server as a whole with it', async () => {
    const health = await healthClient();
    harness!.server.health.setStatus(ProbeService.typeName, 'NOT_SERVING');
    expect((await health.check({ service: ProbeService.typeName })).status).toBe(Status.NOT_SERVING);
    expect((await health.check({ service: '' })).status).toBe(Status.NOT_SERVING);
    harness!.server.health.setStatus(ProbeService.typeName, 'SERVING');
    expect((await health.check({ service: '' })).status).toBe(Status.SERVING);
  });

  it('lists every status', async () => {
    const health = await healthClient();
    const { statuses } = await health.list({});
    expect(Object.fromEntries(Object.entries(statuses).map(([name, r]) => [name, r.status]))).toEqual({
      '': Status.SERVING,
      [ProbeService.typeName]: Status.SERVING,
    });
  });

  it('Watch sends the current status, every change, and NOT_SERVING then ends when shutdown begins', async () => {
    const health = await healthClient();
    const received: Status[] = [];
    const watching = (async () => {
      for await (const response of health.watch({ service: '' })) {
        received.push(response.status);
        if (received.length === 1) harness!.server.health.setStatus(ProbeService.typeName, 'NOT_SERVING');
        if (received.length === 2) harness!.server.health.setStatus(ProbeService.typeName, 'SERVING');
        if (received.length === 3) void harness!.server.shutdown(5_000);
      }
    })();
    await watching;
    expect(received).toEqual([Status.SERVING, Status.NOT_SERVING, Status.SERVING, Status.NOT_SERVING]);
  });

  it('Watch of an unknown service says SERVICE_UNKNOWN and keeps the call open', async () => {
    const health = await healthClient();
    const abort = new AbortController();
    const received: Status[] = [];
    const watching = (async () => {
      for await (const response of health.watch({ service: 'docket.later.v1.Later' }, { signal: abort.signal })) {
        received.push(response.status);
        if (received.length === 1) harness!.server.health.setStatus('docket.later.v1.Later', 'SERVING');
        if (received.length === 2) abort.abort();
      }
    })();
    const outcome = await watching.catch((e: unknown) => ConnectError.from(e).code);
    expect(outcome).toBe(Code.Canceled);
    expect(received).toEqual([Status.SERVICE_UNKNOWN, Status.SERVING]);
  });
});

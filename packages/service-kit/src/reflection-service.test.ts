import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProbeServer, type ProbeHarness } from './testing/probe-server.js';

const run = promisify(execFile);
const BUF = fileURLToPath(new URL('../../../node_modules/.bin/buf', import.meta.url));

let harness: ProbeHarness;
beforeAll(async () => {
  harness = await startProbeServer();
});
afterAll(async () => {
  await harness.server.shutdown(1_000);
});

/** Runs `buf curl --http2-prior-knowledge` (gRPC protocol unless `args` says otherwise). */
async function bufCurl(...args: string[]): Promise<string> {
  const { stdout } = await run(BUF, ['curl', '--http2-prior-knowledge', '--protocol', 'grpc', ...args], {
    timeout: 30_000,
  });
  return stdout;
}

const ALL_METHODS = [
  'docket.testing.v1.ProbeService/Converse',
  'docket.testing.v1.ProbeService/Count',
  'docket.testing.v1.ProbeService/Echo',
  'docket.testing.v1.ProbeService/Unbuilt',
  'grpc.health.v1.Health/Check',
  'grpc.health.v1.Health/List',
  'grpc.health.v1.Health/Watch',
  'grpc.reflection.v1.ServerReflection/ServerReflectionInfo',
  'grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo',
];

describe('server reflection, as buf curl uses it', () => {
  it('lists every method of the served, health and reflection services (v1)', async () => {
    const out = await bufCurl('--reflect-protocol', 'grpc-v1', '--list-methods', harness.url);
    expect(out.trim().split('\n').sort()).toEqual(ALL_METHODS);
  });

  it('lists the same through v1alpha', async () => {
    const out = await bufCurl('--reflect-protocol', 'grpc-v1alpha', '--list-methods', harness.url);
    expect(out.trim().split('\n').sort()).toEqual(ALL_METHODS);
    expect(harness.rpcLines().map((line) => line['rpc'])).toContain(
      '/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo',
    );
  });

  it('lets buf curl call health by name, unauthenticated', async () => {
    const out = await bufCurl('--data', '{"service":""}', `${harness.url}/grpc.health.v1.Health/Check`);
    expect(JSON.parse(out)).toEqual({ status: 'SERVING' });
  });

  it('describes a Docket method fully enough to encode and decode its messages (imports included)', async () => {
    const token = await harness.token('user', { subject: 'reflector' });
    for (const protocol of ['grpc', 'grpcweb', 'connect']) {
      const out = await bufCurl(
        '--protocol',
        protocol,
        '--header',
        `authorization: Bearer ${token}`,
        '--data',
        '{"text":"who"}',
        `${harness.url}/docket.testing.v1.ProbeService/Echo`,
      );
      expect(JSON.parse(out)).toEqual({ text: 'reflector/user' });
    }
  });

  it('lets buf curl hold a bidirectional stream, answered message by message by the server\'s own writer', async () => {
    const token = await harness.token('user', { subject: 'reflector' });
    const out = await bufCurl(
      '--header',
      `authorization: Bearer ${token}`,
      '--data',
      '{"text":"a"} {"text":"b","count":2}',
      `${harness.url}/docket.testing.v1.ProbeService/Converse`,
    );
    const replies = out.trim().split(/\n(?=\{)/).map((reply) => JSON.parse(reply) as { text: string; sequence: number });
    expect(replies).toEqual([
      { text: 'a', sequence: 1 },
      { text: 'b', sequence: 2 },
      { text: 'b', sequence: 3 },
    ]);
  });
});

import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { launchService, type LaunchedService } from './launch-service.js';
import { waitForServing } from './wait-for-serving.js';

const FAKE_SERVICE = fileURLToPath(new URL('../../../test/support/fixtures/fake-service.mjs', import.meta.url));

const launched: LaunchedService[] = [];
afterAll(async () => {
  await Promise.all(launched.map((service) => service.stop()));
});

async function fakeService(env: Record<string, string> = {}): Promise<string> {
  const service = launchService({
    name: 'fake',
    entry: FAKE_SERVICE,
    env: { PATH: process.env['PATH'] ?? '', DOCKET_LISTEN: '127.0.0.1:0', ...env },
  });
  launched.push(service);
  return service.ready;
}

/** A port nothing listens on. */
async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 1}`;
}

describe('waitForServing', () => {
  it('resolves once grpc.health.v1.Health/Check answers SERVING', async () => {
    await expect(waitForServing(await fakeService())).resolves.toBeUndefined();
  });

  it('keeps asking until the deadline and reports the last status', async () => {
    const url = await fakeService({ FAKE_SERVICE_NOT_SERVING: '1' });
    await expect(waitForServing(url, { timeoutMs: 1_500 })).rejects.toThrow(
      `${url} did not report SERVING within 1500 ms (last: status NOT_SERVING)`,
    );
  });

  it('reports the connection error when nothing listens', async () => {
    await expect(waitForServing(await closedPortUrl(), { timeoutMs: 300 })).rejects.toThrow(
      /did not report SERVING within 300 ms \(last: .*(ECONNREFUSED|unavailable)/i,
    );
  });

  it('stops waiting when aborted', async () => {
    const controller = new AbortController();
    // Real time: the abort arrives while the wait (10 s at most) is under way.
    setTimeout(() => controller.abort(new Error('stopped by the test')), 200);
    await expect(
      waitForServing(await closedPortUrl(), { timeoutMs: 10_000, signal: controller.signal }),
    ).rejects.toThrow('stopped by the test');
  });
});

import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startService, stopAll, type ServiceProcess } from './service-process.js';
import { isProcessAlive } from './process-alive.js';

const FAKE_SERVICE = fileURLToPath(new URL('./fixtures/fake-service.mjs', import.meta.url));

afterAll(stopAll);

/** The fixture's first log line: what it was configured with. */
function configuration(service: ServiceProcess): { envKeys: string[]; listen: string; pid: number } {
  const line = service.logs.find((entry) => entry.includes('"msg":"configured"'));
  if (!line) throw new Error(`no configuration line in ${service.logs.join('\n')}`);
  return JSON.parse(line) as { envKeys: string[]; listen: string; pid: number };
}

/** `pid`, asserted to be a real process id: a missing one (undefined, NaN) must not pass as "not alive". */
function processId(pid: number | undefined): number {
  expect(Number.isSafeInteger(pid) && pid! > 0, `pid ${pid} is a positive integer`).toBe(true);
  return pid!;
}

describe('startService', () => {
  it('resolves with the URL from the listening line, capturing stdout and stderr', async () => {
    const service = await startService('admission', { EXTRA: 'yes' }, { entry: FAKE_SERVICE });
    expect(service.name).toBe('admission');
    expect(service.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // stderr is a pipe of its own: its line may come after the listening line on stdout.
    await expect.poll(() => service.logs).toContain('fake-service: a line on stderr');
    const config = configuration(service);
    expect(config.listen).toBe('127.0.0.1:0');
    // Only the minimal environment and what the test passed reach the service.
    expect(config.envKeys.filter((key) => !['PATH', 'HOME'].includes(key))).toEqual(['DOCKET_LISTEN', 'EXTRA']);

    expect(await service.stop()).toBe(0);
    expect(service.logs.some((line) => line.includes('"msg":"draining"'))).toBe(true);
    expect(isProcessAlive(processId(service.process.pid))).toBe(false);
  });

  it('rejects with the captured output when the process exits before listening', async () => {
    const failure = startService('state', { FAKE_SERVICE_EXIT_BEFORE_READY: '7' }, { entry: FAKE_SERVICE });
    await expect(failure).rejects.toThrow(/state exited before listening \(exit code 7\)/);
    await expect(failure).rejects.toThrow(/failing on purpose before listening/);
  });

  it('rejects and kills the process when no listening line comes in time', async () => {
    const failure = startService(
      'events',
      { FAKE_SERVICE_SILENT: '1' },
      // Real time: the start-up deadline must pass; long enough that the fake prints its first line (with its pid) on a loaded machine.
      { entry: FAKE_SERVICE, readyTimeoutMs: 5_000 },
    );
    await expect(failure).rejects.toThrow(/events printed no listening line within 5000 ms/);
    const error = (await failure.catch((e: unknown) => e)) as Error;
    const pid = processId(Number(/"pid":(\d+)/.exec(error.message)?.[1]));
    await expect.poll(() => isProcessAlive(pid)).toBe(false);
  });

  it('kill() crashes the process with SIGKILL', async () => {
    const service = await startService('execution', {}, { entry: FAKE_SERVICE });
    await service.kill();
    expect(await service.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(service.logs.some((line) => line.includes('draining'))).toBe(false);
  });

  it('stop() escalates to SIGKILL when the service ignores SIGTERM', async () => {
    const service = await startService(
      'execution',
      { FAKE_SERVICE_IGNORE_SIGTERM: '1' },
      { entry: FAKE_SERVICE, stopGraceMs: 300 },
    );
    expect(await service.stop()).toBeNull();
    expect(await service.exited).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('restart() starts the same service with the same environment on the same port', async () => {
    const first = await startService('state', { EXTRA: 'kept' }, { entry: FAKE_SERVICE });
    await first.kill();
    const second = await first.restart();
    expect(second.url).toBe(first.url);
    expect(second.process.pid).not.toBe(first.process.pid);
    expect(configuration(second).envKeys).toContain('EXTRA');
    // A running service is stopped first.
    const third = await second.restart();
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect(third.url).toBe(first.url);
  });

  it('stopAll() stops every service still running', async () => {
    const services = await Promise.all(
      ['a', 'b'].map(() => startService('events', {}, { entry: FAKE_SERVICE })),
    );
    await stopAll();
    for (const service of services) expect(await service.exited).toEqual({ code: 0, signal: null });
  });
});

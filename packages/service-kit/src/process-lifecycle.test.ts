import { EventEmitter } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { createLogger } from './logger.js';
import { runUntilSignalled } from './process-lifecycle.js';
import { startProbeServer } from './testing/probe-server.js';

describe('runUntilSignalled', () => {
  it('on SIGTERM shuts the server down, runs onStopped, logs stopped and exits 0', async () => {
    const harness = await startProbeServer();
    const lines: string[] = [];
    const signals = new EventEmitter();
    const order: string[] = [];
    const exited = new Promise<number>((resolve) => {
      runUntilSignalled(
        harness.server,
        createLogger('probe', (line) => lines.push(line)),
        1_000,
        async () => {
          order.push(`onStopped (health shut down: ${harness.server.health.isShutDown})`);
        },
        { signals, exit: resolve },
      );
    });
    signals.emit('SIGTERM', 'SIGTERM');
    expect(await exited).toBe(0);
    expect(order).toEqual(['onStopped (health shut down: true)']);
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['stopping', 'stopped']);
  });

  it('exits 1 at once on a second signal', async () => {
    const harness = await startProbeServer();
    const signals = new EventEmitter();
    const codes: number[] = [];
    let release: (() => void) | undefined;
    runUntilSignalled(
      harness.server,
      createLogger('probe', () => {}),
      1_000,
      () => new Promise<void>((resolve) => (release = resolve)),
      { signals, exit: (code) => codes.push(code) },
    );
    signals.emit('SIGINT', 'SIGINT');
    // The first signal's stop has drained the server and waits in onStopped.
    const stopping = await vi.waitUntil(() => release, { timeout: 5_000, interval: 1 });
    signals.emit('SIGTERM', 'SIGTERM');
    expect(codes).toEqual([1]);
    stopping();
    await vi.waitUntil(() => codes.length === 2, { timeout: 5_000, interval: 1 });
    expect(codes).toEqual([1, 0]);
  });
});

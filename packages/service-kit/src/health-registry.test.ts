import { describe, expect, it } from 'vitest';
import { createHealthRegistry, type WatchedStatus } from './health-registry.js';

async function collect(iterable: AsyncIterable<WatchedStatus>, onEach: (received: WatchedStatus[]) => void) {
  const received: WatchedStatus[] = [];
  for await (const status of iterable) {
    received.push(status);
    onEach(received);
  }
  return received;
}

describe('createHealthRegistry', () => {
  it('derives the overall status from every service', () => {
    const health = createHealthRegistry(['a.v1.A', 'b.v1.B']);
    expect(health.status('')).toBe('SERVING');
    health.setStatus('b.v1.B', 'NOT_SERVING');
    expect(health.status('')).toBe('NOT_SERVING');
    expect(health.status('a.v1.A')).toBe('SERVING');
    health.setStatus('b.v1.B', 'SERVING');
    health.setStatus('', 'NOT_SERVING');
    expect(health.status('')).toBe('NOT_SERVING');
    expect(health.status('c.v1.C')).toBeUndefined();
  });

  it('stays NOT_SERVING after shutdown whatever is set', () => {
    const health = createHealthRegistry(['a.v1.A']);
    health.shutdown();
    health.setStatus('a.v1.A', 'SERVING');
    expect(health.entries()).toEqual([
      ['', 'NOT_SERVING'],
      ['a.v1.A', 'NOT_SERVING'],
    ]);
    expect(health.isShutDown).toBe(true);
  });

  it('watch yields changes without repeats and ends after NOT_SERVING on shutdown', async () => {
    const health = createHealthRegistry(['a.v1.A']);
    const received = await collect(health.watch('a.v1.A', new AbortController().signal), (seen) => {
      if (seen.length === 1) {
        health.setStatus('a.v1.A', 'SERVING');
        health.setStatus('a.v1.A', 'NOT_SERVING');
      }
      if (seen.length === 2) health.setStatus('a.v1.A', 'SERVING');
      if (seen.length === 3) health.shutdown();
    });
    expect(received).toEqual(['SERVING', 'NOT_SERVING', 'SERVING', 'NOT_SERVING']);
  });

  it('watch ends when its signal aborts', async () => {
    const health = createHealthRegistry([]);
    const abort = new AbortController();
    const received = await collect(health.watch('x.v1.X', abort.signal), () => abort.abort());
    expect(received).toEqual(['SERVICE_UNKNOWN']);
  });
});

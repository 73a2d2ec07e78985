import { describe, expect, it } from 'vitest';
import { LOG_LEVELS, createLogger } from './logger.js';

describe('createLogger', () => {
  it('writes one JSON object per line with time, level, service, msg and fields', () => {
    const lines: string[] = [];
    const logger = createLogger('state', (line) => lines.push(line));
    logger.info('listening', { url: 'http://127.0.0.1:7404' });
    logger.warn('slow', { latency_ms: 12.5, big: 2n ** 70n });
    logger.error('boom');
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line).not.toContain('\n');
    const [first, second, third] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(first).toEqual({ time: expect.any(String), level: 'info', service: 'state', msg: 'listening', url: 'http://127.0.0.1:7404' });
    expect(Number.isNaN(Date.parse(String(first!['time'])))).toBe(false);
    expect(second).toMatchObject({ level: 'warn', latency_ms: 12.5, big: '1180591620717411303424' });
    expect(third).toMatchObject({ level: 'error', msg: 'boom' });
    expect(Object.keys(first!).slice(0, 4)).toEqual(['time', 'level', 'service', 'msg']);
  });

  it('does not let fields forge the level, service or message', () => {
    const lines: string[] = [];
    createLogger('events', (line) => lines.push(line)).info('rpc', { level: 'error', service: 'x', msg: 'y', ok: true });
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'info', service: 'events', msg: 'rpc', ok: true });
  });

  it('writes debug lines only at level debug, and says which levels it writes', () => {
    const lines: string[] = [];
    const info = createLogger('state', (line) => lines.push(line));
    info.debug('quiet');
    expect(lines).toEqual([]);
    expect(LOG_LEVELS.map((level) => info.enabled(level))).toEqual([false, true, true, true]);
    const debug = createLogger('state', (line) => lines.push(line), 'debug');
    debug.debug('loud', { n: 1 });
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'debug', msg: 'loud', n: 1 });
  });

  it.each([
    ['debug', ['debug', 'info', 'warn', 'error']],
    ['info', ['info', 'warn', 'error']],
    ['warn', ['warn', 'error']],
    ['error', ['error']],
  ] as const)('at level %s writes %j', (level, written) => {
    const lines: string[] = [];
    const logger = createLogger('state', (line) => lines.push(line), level);
    for (const each of LOG_LEVELS) logger[each](each);
    expect(lines.map((line) => (JSON.parse(line) as { level: string }).level)).toEqual(written);
  });
});

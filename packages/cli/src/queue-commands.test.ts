import { describe, expect, it } from 'vitest';
import { UsageError } from './command.js';
import { parseQueueArguments } from './queue-commands.js';

/** The policy change a `docket queue set|pause|resume` line sends. */
function changeOf(args: readonly string[]) {
  const parsed = parseQueueArguments(args);
  if (parsed.action !== 'set') throw new Error(`${args.join(' ')} did not parse as a change`);
  return parsed.change;
}

describe('docket queue arguments', () => {
  it('reads get, set (only the limits given), pause and resume', () => {
    expect(parseQueueArguments(['get', 'reports', '--json'])).toMatchObject({ action: 'get', queue: 'reports', json: true });
    expect(parseQueueArguments(['set', 'reports', '--max-concurrency', '5'])).toMatchObject({ action: 'set', change: { maxConcurrency: 5 } });
    expect(changeOf(['set', 'reports', '--per-key-concurrency', '2'])).toEqual({ perKeyConcurrency: 2 });
    expect(changeOf(['set', 'reports', '--per-key-concurrency', 'none'])).toEqual({ perKeyConcurrency: 0 });
    expect(parseQueueArguments(['set', 'reports', '--rate', '10/1s', '--max-concurrency', 'none'])).toMatchObject({
      change: { maxConcurrency: 0, rateLimit: { jobs: 10, per: { seconds: 1n } } },
    });
    expect(changeOf(['set', 'reports', '--rate', '500/1h'])).toEqual({ rateLimit: { jobs: 500, per: { seconds: 3_600n } } });
    expect(changeOf(['set', 'reports', '--rate', 'none'])).toEqual({ rateLimit: { jobs: 0 } });
    expect(changeOf(['pause', 'reports'])).toEqual({ paused: true });
    expect(changeOf(['resume', 'reports'])).toEqual({ paused: false });
  });

  it('refuses what it cannot send as a usage error', () => {
    for (const args of [
      [],
      ['drop', 'reports'],
      ['get'],
      ['get', 'Bad Queue'],
      ['get', 'a', 'b'],
      ['get', 'reports', '--rate', '1/1s'],
      ['set', 'reports'],
      ['set', 'reports', '--max-concurrency', '0'],
      ['set', 'reports', '--max-concurrency', 'many'],
      ['set', 'reports', '--rate', '10'],
      ['set', 'reports', '--rate', '0/1s'],
      ['set', 'reports', '--rate', '10/1.5s'],
      ['pause', 'reports', '--max-concurrency', '3'],
      ['set', 'reports', '--per-key-concurrency', '-1'],
    ]) {
      expect(() => parseQueueArguments(args), args.join(' ')).toThrow(UsageError);
    }
  });
});

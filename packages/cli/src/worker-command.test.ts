import { describe, expect, it } from 'vitest';
import { UsageError } from './command.js';
import { runCli } from './run-cli.js';
import { defaultWorkerName, parseWorkerArguments } from './worker-command.js';

describe('docket worker arguments', () => {
  it('defaults to the local execution service, the default queue and four jobs at once', () => {
    expect(parseWorkerArguments([])).toEqual({
      url: 'http://127.0.0.1:7402',
      token: undefined,
      name: defaultWorkerName(),
      queues: ['default'],
      concurrency: 4,
    });
    expect(defaultWorkerName()).toMatch(/^demo-[A-Za-z0-9._:-]+$/);
  });

  it('takes repeated queues and every option', () => {
    expect(
      parseWorkerArguments(['--url', 'https://exec.example:443', '--token', 't', '--name', 'w-1', '--queue', 'a', '--queue', 'b', '--concurrency', '16']),
    ).toEqual({ url: 'https://exec.example:443', token: 't', name: 'w-1', queues: ['a', 'b'], concurrency: 16 });
  });

  it('refuses wrong arguments as usage errors', () => {
    for (const args of [['--concurrency', '0'], ['--concurrency', '2.5'], ['--url', 'ftp://x'], ['--name', 'a b'], ['--queue', 'a', '--queue', 'a'], ['--token', ''], ['extra']]) {
      expect(() => parseWorkerArguments(args)).toThrow(UsageError);
    }
  });

  it('is listed by docket help and explains itself', async () => {
    const out: string[] = [];
    const context = { env: {}, cwd: '/', out: (text: string) => out.push(text), err: (text: string) => out.push(text) };
    expect(await runCli(['help'], context)).toBe(0);
    expect(out.join('')).toMatch(/\n {2}worker +run a sample worker/);
    out.length = 0;
    expect(await runCli(['worker', '--help'], context)).toBe(0);
    expect(out.join('')).toContain('Usage: docket worker');
    expect(await runCli(['worker', '--concurrency', 'x'], context)).toBe(2);
  });
});

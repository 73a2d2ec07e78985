import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fromJsonString } from '@bufbuild/protobuf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobSchema } from '@docket/proto/docket/common/v1/job_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { REPO_ROOT, startCluster, stopAll, type DocketCluster } from '../../../test/support/cluster.js';
import { createMigratedTestDatabase } from '../../../test/support/database.js';
import { runDocket, type CliRun } from '../../../test/support/docket-cli.js';

/*
 * The built `docket` binary (packages/cli/dist/main.js, run as a user runs
 * it) against a real cluster: submit a job to a queue no worker serves,
 * watch it, cancel it while the watch follows, and read it back with get
 * and list. The watch must print the journal as it happens and exit 4.
 */

const QUEUE = 'cli-owner-flow';
const CANCEL_KEY = 'cli-owner-flow-cancel-0001';

let cluster: DocketCluster;
let token: string;

beforeAll(async () => {
  cluster = await startCluster({ databaseUrl: await createMigratedTestDatabase('cli owner flow') });
  token = await cluster.tokenFor('cli-flow-owner', 'user');
});

afterAll(async () => {
  await stopAll();
});

/** A `docket` child process still running: its output so far, a wait for a piece of it, and its end. */
function startDocket(args: readonly string[], env: Readonly<Record<string, string>>) {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'packages/cli/dist/main.js'), ...args], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiters: (() => void)[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    waiters.splice(0).forEach((wake) => wake());
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<CliRun>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return {
    done,
    /**
     * Resolves once standard output contains `text` (checked on each chunk of output and polled every 100 ms);
     * rejects after `timeoutMs` or if the process ends first.
     */
    async printed(text: string, timeoutMs = 20_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!stdout.includes(text)) {
        if (child.exitCode !== null) throw new Error(`docket ${args[0]} exited ${child.exitCode} before printing ${JSON.stringify(text)}: ${stdout}${stderr}`);
        if (Date.now() > deadline) throw new Error(`docket ${args[0]} did not print ${JSON.stringify(text)} in ${timeoutMs} ms: ${stdout}${stderr}`);
        await new Promise<void>((wake) => {
          waiters.push(wake);
          // Real time: the poll interval of this wait.
          setTimeout(wake, 100);
        });
      }
    },
    /** Standard output so far. */
    output: () => stdout,
    kill: () => child.kill('SIGKILL'),
  };
}

describe('docket submit, watch, cancel, get and list against a real cluster', () => {
  it('watches a job cancelled meanwhile to its end (exit 4, the journal printed), then gets and lists it as JSON', async () => {
    const admission = ['--url', cluster.admission.url];
    const owner = { DOCKET_TOKEN: token };

    const submitted = await runDocket(['submit', '--queue', QUEUE, '--input', '{"count":3}', '--label', 'owner flow', ...admission], owner);
    expect(submitted.code, submitted.stderr).toBe(0);
    const jobId = /^submitted (job_\S+) to cli-owner-flow: QUEUED\n$/.exec(submitted.stdout)?.[1];
    expect(jobId, submitted.stdout).toBeDefined();
    expect(submitted.stderr).toMatch(/^docket submit: idempotency key cli-[A-Za-z0-9_-]{24} \(to retry this request, repeat it with --key cli-/);

    const watch = startDocket(['watch', jobId!, ...admission, '--events-url', cluster.events.url, '--token', token], {});
    try {
      await watch.printed('1 job.admitted\n');
      expect(watch.output()).not.toContain('job.cancelled');

      const cancelled = await runDocket(['cancel', jobId!, '--key', CANCEL_KEY, ...admission], owner);
      expect(cancelled).toEqual({ code: 0, stdout: `cancelled ${jobId}: the job is CANCELLED\n`, stderr: '' });

      const watched = await watch.done;
      expect(watched.stderr).toBe('');
      expect(watched.code).toBe(4);
      const lines = watched.stdout.trimEnd().split('\n');
      expect(lines.slice(0, -1)).toEqual(['1 job.admitted', '2 job.cancelled']);
      expect(lines.at(-1)).toMatch(new RegExp(`^job ${jobId} ended CANCELLED`));
    } finally {
      watch.kill();
    }

    const replayed = await runDocket(['cancel', jobId!, '--key', CANCEL_KEY, ...admission], owner);
    expect(replayed.stdout).toBe(`cancelled ${jobId}: the job is CANCELLED (replayed: this key was used before)\n`);

    const got = await runDocket(['get', jobId!, '--json', ...admission], owner);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout.trimEnd()).not.toContain('\n');
    const job = fromJsonString(JobSchema, got.stdout);
    expect(job).toMatchObject({ id: jobId, queue: QUEUE, label: 'owner flow', status: JobStatus.CANCELLED, input: { count: 3 }, latestSequence: 2n });

    const listed = await runDocket(['list', '--queue', QUEUE, '--status', 'cancelled', '--json', ...admission], owner);
    expect(listed.code, listed.stderr).toBe(0);
    const jobs = listed.stdout.trimEnd().split('\n').map((line) => fromJsonString(JobSchema, line));
    expect(jobs.map((listedJob) => [listedJob.id, listedJob.status])).toEqual([[jobId, JobStatus.CANCELLED]]);

    const queued = await runDocket(['list', '--queue', QUEUE, '--status', 'queued', '--json', ...admission], owner);
    expect(queued).toEqual({ code: 0, stdout: '', stderr: '' });
  });
});

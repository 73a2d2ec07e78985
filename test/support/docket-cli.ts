import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './service-process.js';

/** What a CLI run printed and how it exited. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `docket <args>` as a user runs it: the built CLI in a child process, with only PATH and `env` set. */
export async function runDocket(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<CliRun> {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'packages/cli/dist/main.js'), ...args], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stdout, stderr };
}

/** `docket verify <job_id>` against a cluster's events service with `token`. */
export function docketVerify(eventsUrl: string, token: string, jobId: string): Promise<CliRun> {
  return runDocket(['verify', jobId, '--events-url', eventsUrl, '--token', token]);
}

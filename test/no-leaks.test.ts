import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Code } from '@connectrpc/connect';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { clientFor, failureOf, type SeenFailure } from './support/clients.js';
import { REPO_ROOT, startCluster, stopAll, type DocketCluster } from './support/cluster.js';
import { createTestDatabase } from './support/database.js';
import { newIdempotencyKey } from './support/keys.js';
import { openSql } from './support/sql.js';

/** Text that must never appear in a log line or an error a client sees. */
const FORBIDDEN_PATTERNS: Record<string, RegExp> = {
  'a connection string': /postgres(ql)?:\/\//i,
  'SQL text': /\b(select|insert into|update|delete from|relation)\b.*\b(from|values|set|where|does not exist)\b/i,
  'a stack trace': /\n?\s+at .+\(.+:\d+:\d+\)|\bat (async )?[\w.<>]+ \(/,
  'a file path': /\/(work|root|home|tmp)\/|node_modules|\.js:\d+/,
};

let cluster: DocketCluster;
let databaseUrl: string;
let sql: pg.Client;
let alice: string;
const secrets: string[] = [];
const failures: SeenFailure[] = [];

beforeAll(async () => {
  databaseUrl = await createTestDatabase('no leaks');
  cluster = await startCluster({ databaseUrl });
  sql = await openSql(databaseUrl);
  alice = await cluster.tokenFor('alice', 'user');
  secrets.push(alice, cluster.secret, cluster.serviceToken, cluster.cursorSecret, databaseUrl);
});

afterAll(async () => {
  await sql?.end();
  await stopAll();
});

function assertClean(text: string, where: string): void {
  for (const [what, pattern] of Object.entries(FORBIDDEN_PATTERNS)) {
    expect(pattern.test(text), `${where} contains ${what}: ${text}`).toBe(false);
  }
  for (const secret of secrets) expect(text.includes(secret), `${where} contains a key, token or secret`).toBe(false);
}

describe('what leaves a service', () => {
  it('keeps keys, tokens, SQL, connection strings and stacks out of errors and logs across a range of failures', async () => {
    const admission = clientFor(AdmissionService, cluster.admission.url, alice);
    const key = newIdempotencyKey('secret-key');
    secrets.push(key);
    await admission.submitJob({ idempotencyKey: key, queue: 'email', input: { n: 1 } });
    await admission.submitJob({ idempotencyKey: key, queue: 'email', input: { n: 1 } });
    failures.push(await failureOf(admission.submitJob({ idempotencyKey: key, queue: 'email', input: { n: 2 } })));
    for (const badKey of ['short-key', 'key with spaces in it', 'ключ-не-ascii-символы']) {
      secrets.push(badKey);
      failures.push(await failureOf(admission.submitJob({ idempotencyKey: badKey, queue: 'email' })));
    }
    failures.push(await failureOf(admission.getJob({ jobId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa' })));
    failures.push(await failureOf(admission.listJobs({ pageToken: 'forged.token' })));
    failures.push(await failureOf(clientFor(AdmissionService, cluster.admission.url, 'Bearer-garbage').getJob({ jobId: 'x' })));

    // Worker effect keys and owner decision keys: refused calls never echo them.
    const worker = clientFor(ExecutionService, cluster.execution.url, await cluster.tokenFor('leaky-worker', 'worker'));
    const { workerIncarnation } = await worker.registerWorker({ workerName: 'leaks', queues: ['effects'], maxConcurrency: 1 });
    const { job: effectJob } = await admission.submitJob({ idempotencyKey: newIdempotencyKey('effect-job'), queue: 'effects' });
    const { assignments } = await worker.claimJobs({ workerIncarnation, maxJobs: 1, wait: durationFromMs(3_000), operationId: 'op_leaks_claim_0001' });
    const authority = assignments[0]!.authority!;
    const attempt = { attemptId: authority.attemptId, fence: authority.fence, workerIncarnation };
    const effectKey = newIdempotencyKey('effect-secret');
    secrets.push(effectKey);
    await worker.beginEffect({ attempt, kind: 'payment.capture', idempotencyKey: effectKey, inputDigest: 'a'.repeat(64), operationId: 'op_leaks_begin_0001' });
    failures.push(await failureOf(worker.beginEffect({ attempt, kind: 'email.send', idempotencyKey: effectKey, inputDigest: 'a'.repeat(64), operationId: 'op_leaks_begin_0002' })));
    failures.push(await failureOf(worker.beginEffect({ attempt, kind: 'k', idempotencyKey: 'not a key, secret!', inputDigest: 'a'.repeat(64), operationId: 'op_leaks_begin_0003' })));
    const decideKey = newIdempotencyKey('decide-secret');
    secrets.push(decideKey, 'not a key, secret!');
    failures.push(await failureOf(admission.decideApproval({ idempotencyKey: decideKey, jobId: effectJob!.id, approvalId: 'apr_aaaaaaaaaaaaaaaaaaaaaaaaaa', decision: 1 })));

    // A database failure nobody planned for: the table disappears under the service.
    await sql.query('alter table jobs rename to jobs_hidden');
    try {
      const internal = await failureOf(admission.getJob({ jobId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa' }));
      expect(internal).toMatchObject({ code: Code.Internal, reason: 'INTERNAL', message: 'internal error' });
      failures.push(internal);
    } finally {
      await sql.query('alter table jobs_hidden rename to jobs');
    }

    // The state service goes away: admission answers UNAVAILABLE without naming where state lives.
    await cluster.state.stop();
    const unavailable = await failureOf(admission.getJob({ jobId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa' }));
    expect(unavailable.code).toBe(Code.Unavailable);
    expect(unavailable.message).not.toContain(new URL(cluster.state.url).port);
    failures.push(unavailable);

    for (const failure of failures) assertClean(JSON.stringify(failure), 'an error response');
    const lines = Object.values(cluster.replicas).flatMap((replicas) => replicas.flatMap((replica) => replica.logs));
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) assertClean(line, 'a log line');
  });

  it('a state service given an unreachable database exits without printing its connection string or password', async () => {
    const url = 'postgres://docket:hunter2-very-secret@127.0.0.1:1/docket';
    const output = await new Promise<{ code: number | null; text: string }>((resolve) => {
      const child = spawn(process.execPath, [join(REPO_ROOT, 'services/state/dist/main.js')], {
        env: { PATH: process.env['PATH'] ?? '', DOCKET_LISTEN: '127.0.0.1:0', DOCKET_AUTH_SECRET: 'x', DOCKET_DATABASE_URL: url },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let text = '';
      child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.on('exit', (code) => resolve({ code, text }));
    });
    expect(output.code).toBe(1);
    expect(output.text).toContain('cannot reach or migrate the database');
    expect(output.text).not.toContain('hunter2');
    assertClean(output.text, 'the state service output');
  });
});

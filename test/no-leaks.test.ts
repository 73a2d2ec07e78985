import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Code } from '@connectrpc/connect';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { EventService, WatchJobsResponseSchema } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { toJson } from '@bufbuild/protobuf';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { clientFor, failureOf, type SeenFailure } from './support/clients.js';
import { REPO_ROOT, startCluster, type DocketCluster, type ServiceProcess } from './support/cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startClusterWithSql, stopClustersWithSql } from './support/cluster-with-sql.js';
import { newIdempotencyKey } from './support/keys.js';
import { openSql, untilWaitingForALock } from './support/sql.js';

/** Text that must never appear in a log line or an error a client sees. */
const FORBIDDEN_PATTERNS: Record<string, RegExp> = {
  'a connection string': /postgres(ql)?:\/\//i,
  'SQL text': /\b(select|insert into|update|delete from|relation)\b.*\b(from|values|set|where|does not exist)\b/i,
  'a stack trace': /\n?\s+at .+\(.+:\d+:\d+\)|\bat (async )?[\w.<>]+ \(/,
  'a file path': /\/(work|root|home|tmp)\/|node_modules|\.js:\d+/,
  "Postgres' own error text": /deadlock detected|could not serialize|read-only transaction|canceling statement|statement timeout|while (locking|updating) tuple|process \d+ waits|on transaction \d+|idempotency_records/i,
};

let cluster: DocketCluster;
let databaseUrl: string;
let sql: pg.Client;
let alice: string;
const secrets: string[] = [];
const failures: SeenFailure[] = [];

beforeAll(async () => {
  databaseUrl = await createMigratedTestDatabase('no leaks');
  ({ cluster, sql } = await startClusterWithSql(startCluster, { databaseUrl }));
  alice = await cluster.tokenFor('alice', 'user');
  secrets.push(alice, cluster.secret, cluster.serviceToken, cluster.cursorSecret, databaseUrl);
});

afterAll(stopClustersWithSql);

/** State processes replaced by a restart in this file: their log lines are scanned too. */
const retired: ServiceProcess[] = [];

/** Every line every service process of this file has logged so far, restarted ones included. */
function allLogLines(): string[] {
  const current = Object.values(cluster.replicas).flatMap((replicas) => [...replicas]);
  return [...retired, ...current].flatMap((service) => service.logs);
}

/** Restarts the state service (so its new connections pick up database settings), keeping the old process's logs. */
async function restartState(): Promise<void> {
  retired.push(cluster.state);
  await cluster.state.restart();
}

/** A worker-supplied secret of the kind a careless handler puts into a progress or failure message. */
function workerSecret(kind: string): string {
  const secret = `${kind}_live_${randomBytes(12).toString('hex')}`;
  secrets.push(secret);
  return secret;
}

function assertClean(text: string, where: string): void {
  for (const [what, pattern] of Object.entries(FORBIDDEN_PATTERNS)) {
    expect(pattern.test(text), `${where} contains ${what}: ${text}`).toBe(false);
  }
  for (const secret of secrets) expect(text.includes(secret), `${where} contains a key, token or secret`).toBe(false);
}

describe('what leaves a service', () => {
  it('keeps worker-supplied secrets out of every log line, and refused execution and events calls clean', async () => {
    const seen: SeenFailure[] = [];
    const owner = clientFor(AdmissionService, cluster.admission.url, alice);
    const workerToken = await cluster.tokenFor('secretive-worker', 'worker');
    secrets.push(workerToken);
    const worker = clientFor(ExecutionService, cluster.execution.url, workerToken);
    const queue = `leaky-${randomBytes(4).toString('hex')}`;
    const { workerIncarnation } = await worker.registerWorker({ workerName: `leaks-${queue}`, queues: [queue], maxConcurrency: 2 });
    const { job: first } = await owner.submitJob({ idempotencyKey: newIdempotencyKey('leaky-first'), queue });
    const { job: second } = await owner.submitJob({ idempotencyKey: newIdempotencyKey('leaky-second'), queue });
    const { assignments } = await worker.claimJobs({ workerIncarnation, maxJobs: 2, wait: durationFromMs(3_000), operationId: 'op_secretive_claim_01' });
    expect(assignments.map((a) => a.envelope?.jobId).sort()).toEqual([first!.id, second!.id].sort());
    const attemptOn = (jobId: string) => {
      const authority = assignments.find((a) => a.envelope?.jobId === jobId)!.authority!;
      return { attemptId: authority.attemptId, fence: authority.fence, workerIncarnation };
    };
    const [one, two] = [attemptOn(first!.id), attemptOn(second!.id)];

    // Accepted calls that carry secrets: progress, checkpoint, a worker event, and a failure message and details.
    const progressSecret = workerSecret('sk');
    await worker.reportProgress({ attempt: one, operationId: 'op_secretive_prog_01', progress: { completedUnits: 1n, totalUnits: 2n, message: `charging with api key ${progressSecret}` } });
    await worker.saveCheckpoint({ attempt: one, operationId: 'op_secretive_ckpt_01', checkpoint: { token: workerSecret('ckpt') } });
    await worker.appendEvents({ attempt: one, operationId: 'op_secretive_evnt_01', events: [{ type: 'worker.note', payload: { password: workerSecret('pw') } }] });
    await worker.reportOutcome({
      attempt: one,
      operationId: 'op_secretive_done_01',
      outcome: { case: 'failure', value: { failureClass: FailureClass.INVALID_INPUT, message: `card rejected for ${workerSecret('card')}`, safeDetails: { key: workerSecret('details') } } },
    });

    // Refused calls that carry secrets: none may echo them.
    const refusedSecret = workerSecret('refused');
    const refusals: [string, Promise<unknown>, string][] = [
      // a service-assigned failure class from a worker
      ['INVALID_FIELD', worker.reportOutcome({ attempt: two, operationId: 'op_secretive_bad_001', outcome: { case: 'failure', value: { failureClass: FailureClass.CANCELLED, message: `cancel ${refusedSecret}` } } }), 'a service-assigned failure class'],
      // the same operation id with another payload
      ['OPERATION_MISMATCH', worker.reportProgress({ attempt: one, operationId: 'op_secretive_prog_01', progress: { completedUnits: 2n, message: `again ${refusedSecret}` } }), 'an operation id reused'],
      // an attempt that has ended, and a fence that never was
      ['STALE_AUTHORITY', worker.reportProgress({ attempt: one, operationId: 'op_secretive_prog_02', progress: { completedUnits: 2n, message: `late ${refusedSecret}` } }), 'an ended attempt'],
      ['STALE_AUTHORITY', worker.renewAttempt({ attempt: { ...two, fence: two.fence + 7n }, operationId: 'op_secretive_renw_01' }), 'a wrong fence'],
      ['INVALID_FIELD', worker.appendEvents({ attempt: two, operationId: 'op_secretive_evnt_02', events: [{ type: `not a type ${refusedSecret}`, payload: {} }] }), 'a malformed event type'],
    ];
    for (const [reason, call, what] of refusals) {
      const failure = await failureOf(call);
      expect(failure.reason, what).toBe(reason);
      seen.push(failure);
    }
    // Roles and tokens at execution and events.
    seen.push(await failureOf(clientFor(ExecutionService, cluster.execution.url, alice).renewAttempt({ attempt: two, operationId: 'op_secretive_renw_02' })));
    seen.push(await failureOf(clientFor(ExecutionService, cluster.execution.url, `${workerToken}x`).renewAttempt({ attempt: two, operationId: 'op_secretive_renw_03' })));
    const events = clientFor(EventService, cluster.events.url, alice);
    seen.push(await failureOf(events.readJobEvents({ jobId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa' })));
    seen.push(await failureOf(events.readJobEvents({ jobId: first!.id, afterSequence: 1_000n })));
    seen.push(await failureOf(clientFor(EventService, cluster.events.url, workerToken).readJobEvents({ jobId: first!.id })));
    seen.push(await failureOf(clientFor(EventService, cluster.events.url, 'Bearer-garbage').readJobEvents({ jobId: first!.id })));
    // A forged WatchJobs cursor is not an error but a resync frame (docs/events.md): it must not echo the cursor either.
    const stop = new AbortController();
    for await (const frame of events.watchJobs({ cursor: `forged.${refusedSecret}` }, { signal: stop.signal })) {
      const text = JSON.stringify(toJson(WatchJobsResponseSchema, frame));
      expect(text).toContain('CURSOR_INVALID');
      assertClean(text, 'a WatchJobs resync frame');
      break;
    }
    stop.abort();
    expect(seen.map((failure) => failure.reason)).toEqual([
      'INVALID_FIELD',
      'OPERATION_MISMATCH',
      'STALE_AUTHORITY',
      'STALE_AUTHORITY',
      'INVALID_FIELD',
      'PERMISSION_DENIED',
      'UNAUTHENTICATED',
      'NOT_FOUND',
      'CURSOR_BEYOND_LATEST',
      'PERMISSION_DENIED',
      'UNAUTHENTICATED',
    ]);

    // The failure reached its owner (that is its purpose), and the journal holds the worker's event.
    const { job: failed } = await owner.getJob({ jobId: first!.id });
    expect(failed?.failure?.message).toContain('card rejected for');
    expect((await events.readJobEvents({ jobId: first!.id })).events.map((event) => event.type)).toContain('worker.note');

    for (const failure of seen) assertClean(JSON.stringify(failure), 'an execution or events error');
    const lines = allLogLines();
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) assertClean(line, 'a log line');
  });

  describe('the database conditions of docs/errors.md, provoked for real', () => {
    let databaseName: string;
    let holder: pg.Client;
    let observer: pg.Client;

    beforeAll(async () => {
      databaseName = new URL(databaseUrl).pathname.slice(1);
      holder = await openSql(databaseUrl);
      holder.on('error', () => {});
      observer = await openSql(databaseUrl);
    });

    afterAll(async () => {
      await holder?.end();
      await observer?.end();
    });

    /** Runs `body` with a database-wide setting the state service picks up on restart; restores it (and restarts) after. */
    async function withDatabaseSetting(name: string, value: string, body: () => Promise<void>): Promise<void> {
      await sql.query(`alter database "${databaseName}" set ${name} = '${value}'`);
      await restartState();
      try {
        await body();
      } finally {
        await sql.query(`alter database "${databaseName}" reset ${name}`);
        await restartState();
      }
    }

    /** Polls every 10 ms until a state-service connection waits for a lock. */
    const untilStateWaitsForALock = () =>
      untilWaitingForALock(observer, 'the state service never waited for the lock', { applicationName: 'docket-state', tries: 1_000 });

    const owner = () => clientFor(AdmissionService, cluster.admission.url, alice);

    /** A queued job of alice's, and the key of a CancelJob for it that the test will try to push through. */
    async function queuedJob(label: string): Promise<{ jobId: string; cancelKey: string }> {
      const { job } = await owner().submitJob({ idempotencyKey: newIdempotencyKey(label), queue: `db-${label}` });
      const cancelKey = newIdempotencyKey(`${label}-cancel`);
      secrets.push(cancelKey);
      return { jobId: job!.id, cancelKey };
    }

    /** After the condition cleared, the same key performs the cancel once: nothing of the failed try was kept. */
    async function expectRetrySucceeds(jobId: string, cancelKey: string): Promise<void> {
      const retried = await owner().cancelJob({ idempotencyKey: cancelKey, jobId });
      expect(retried).toMatchObject({ replayed: false, job: { status: JobStatus.CANCELLED } });
      const { rows } = await sql.query<{ type: string }>('select type from job_events where job_id = $1 order by sequence', [jobId]);
      expect(rows.map((row) => row.type)).toEqual(['job.admitted', 'job.cancelled']);
    }

    function expectCleanEverywhere(failure: SeenFailure): void {
      assertClean(JSON.stringify(failure), 'a database-condition error');
      for (const line of allLogLines()) assertClean(line, 'a log line');
    }

    it("a statement timeout (57014), from the caller's deadline, answers DEADLINE_EXCEEDED and commits nothing", async () => {
      const { jobId, cancelKey } = await queuedJob('timeout');
      let failure: SeenFailure | undefined;
      await holder.query('begin');
      try {
        await holder.query('select id from jobs where id = $1 for update', [jobId]);
        // The caller waits 4 s: the state service's transaction gets that, less a 250 ms margin for the
        // typed answer to arrive first (a shorter deadline's tenth can be too little on a loaded machine).
        failure = await failureOf(owner().cancelJob({ idempotencyKey: cancelKey, jobId }, { timeoutMs: 4_000 }));
      } finally {
        await holder.query('rollback');
      }
      expect(failure).toMatchObject({ code: Code.DeadlineExceeded, reason: 'DEADLINE_EXCEEDED', domain: 'docket' });
      await expectRetrySucceeds(jobId, cancelKey);
      expectCleanEverywhere(failure!);
    });

    it('a deadlock (40P01) answers UNAVAILABLE', async () => {
      const { jobId, cancelKey } = await queuedJob('deadlock');
      await holder.query('begin');
      let failure: SeenFailure;
      try {
        // The test's transaction checks for deadlocks only after 30 s, so Postgres aborts the state service's.
        await holder.query("set local deadlock_timeout = '30s'");
        await holder.query('select id from jobs where id = $1 for update', [jobId]);
        // CancelJob binds its idempotency record, then waits for the job row this transaction holds ...
        const cancelled = failureOf(owner().cancelJob({ idempotencyKey: cancelKey, jobId }));
        await untilStateWaitsForALock();
        // ... while this transaction waits for the state service's uncommitted idempotency record: a cycle.
        await holder.query('lock table idempotency_records in share mode');
        failure = await cancelled;
      } finally {
        await holder.query('rollback');
      }
      expect(failure).toMatchObject({ code: Code.Unavailable, reason: 'UNAVAILABLE', domain: 'docket' });
      await expectRetrySucceeds(jobId, cancelKey);
      expectCleanEverywhere(failure);
    });

    it('a server that refuses writes (25006, a standby still being promoted) answers UNAVAILABLE, and its connections are replaced', async () => {
      const { jobId, cancelKey } = await queuedJob('read-only');
      // Every new session of the database is read-only, as one on a node in recovery is; a restarted state service has only such connections.
      await sql.query(`alter database "${databaseName}" set default_transaction_read_only = on`);
      let failure: SeenFailure | undefined;
      try {
        await restartState();
        failure = await failureOf(owner().cancelJob({ idempotencyKey: cancelKey, jobId }));
        const { rows } = await observer.query<{ type: string }>('select type from job_events where job_id = $1 order by sequence', [jobId]);
        expect(rows.map((row) => row.type)).toEqual(['job.admitted']);
      } finally {
        await sql.query(`alter database "${databaseName}" reset default_transaction_read_only`);
      }
      expect(failure).toMatchObject({ code: Code.Unavailable, reason: 'UNAVAILABLE', domain: 'docket' });
      // No restart this time: the pool dropped the connections that met the refusal, so its next ones are writable.
      await expectRetrySucceeds(jobId, cancelKey);
      expectCleanEverywhere(failure!);
    });

    it('a serialization failure (40001) answers UNAVAILABLE', async () => {
      const { jobId, cancelKey } = await queuedJob('serialization');
      let failure: SeenFailure | undefined;
      // Under REPEATABLE READ, a row changed by a transaction that committed after the state service's snapshot cannot be locked.
      await withDatabaseSetting('default_transaction_isolation', 'repeatable read', async () => {
        await holder.query('begin');
        let committed = false;
        try {
          await holder.query('update jobs set label = label where id = $1', [jobId]);
          const cancelled = failureOf(owner().cancelJob({ idempotencyKey: cancelKey, jobId }));
          await untilStateWaitsForALock();
          await holder.query('commit');
          committed = true;
          failure = await cancelled;
        } finally {
          if (!committed) await holder.query('rollback');
        }
      });
      expect(failure).toMatchObject({ code: Code.Unavailable, reason: 'UNAVAILABLE', domain: 'docket' });
      await expectRetrySucceeds(jobId, cancelKey);
      expectCleanEverywhere(failure!);
    });
  });

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
    const lines = allLogLines();
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) assertClean(line, 'a log line');
  });

  it('a state service given an unreachable database exits without printing its connection string or password', async () => {
    const url = 'postgres://docket:hunter2-very-secret@127.0.0.1:1/docket';
    const output = await new Promise<{ code: number | null; text: string }>((resolve) => {
      const child = spawn(process.execPath, [join(REPO_ROOT, 'services/state/dist/main.js')], {
        env: { PATH: process.env['PATH'] ?? '', DOCKET_LISTEN: '127.0.0.1:0', DOCKET_SERVICE_AUTH_SECRET: randomBytes(32).toString('base64url'), DOCKET_DATABASE_URL: url },
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

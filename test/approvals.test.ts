import { Code } from '@connectrpc/connect';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ApprovalDecision } from '@docket/proto/docket/common/v1/approval_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { clientFor, failureOf } from './support/clients.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { newIdempotencyKey } from './support/keys.js';
import { ExecutionHarness, quickSweepsEnv } from './support/raw-worker-harness.js';
import { attemptOf, newOperationId } from './support/raw-worker.js';

/*
 * Approvals (SPEC section 7) through the real services: a worker's
 * RequestApproval pauses the job, the owner's DecideApproval burns the
 * decision's digest in the approval history before journaling it, and the
 * history (its own schema, owner and triggers) outlives any rollback of
 * the job tables.
 */

let harness: ExecutionHarness;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'approval-owner', { databaseUrl: await createMigratedTestDatabase('approvals'), env: quickSweepsEnv(2_000) });
});

afterAll(() => harness?.close());

const HISTORY = 'docket_approval_history.decisions';

const decide = (jobId: string, approvalId: string, decision: ApprovalDecision, idempotencyKey = newIdempotencyKey('decide')) =>
  harness.admission.decideApproval({ idempotencyKey, jobId, approvalId, decision, comment: 'looks right' });

/** A job whose worker saved a checkpoint and asked for approval: it is PAUSED, waiting. */
/** A `jobs` column's value as an update takes it back: a jsonb object as JSON text, anything else (a text[], a timestamp) as node-postgres writes it. */
function jsonbAsText(value: unknown): unknown {
  return typeof value === 'object' && value !== null && !(value instanceof Date) && !Array.isArray(value) ? JSON.stringify(value) : value;
}

async function waitingJob(label: string) {
  const { worker, queue } = await harness.workerOnFreshQueue(label, 2);
  const job = await harness.submit({ queue, input: { amount: 5 } });
  const [assignment] = await worker.claim({ waitMs: 3_000 });
  expect(assignment?.envelope?.lastApproval).toBeUndefined();
  const attempt = attemptOf(assignment!);
  await worker.expectOk('saveCheckpoint', { attempt, operationId: newOperationId(), checkpoint: { step: 'before-ship' } });
  const operationId = newOperationId();
  const request = { attempt, operationId, prompt: 'Ship 5 units?', details: { amount: 5 } };
  const { approvalId } = await worker.expectOk('requestApproval', request);
  return { worker, queue, jobId: job.id, attempt, approvalId, request, fence: assignment!.authority!.fence };
}

describe('RequestApproval', () => {
  it('pauses the job, ends the attempt and shows the pending approval; only DecideApproval lets it go on', async () => {
    const { worker, jobId, attempt, approvalId, request } = await waitingJob('request');
    expect(approvalId).toMatch(/^apr_/);
    const { job } = await harness.admission.getJob({ jobId });
    expect(job?.status).toBe(JobStatus.PAUSED);
    expect(job?.authoritativeAttempt).toBeUndefined();
    expect(job?.pendingApproval).toMatchObject({ approvalId, prompt: 'Ship 5 units?', details: { amount: 5 }, spent: false });
    // A replay of the request answers the same approval; the ended attempt can do nothing else.
    expect((await worker.expectOk('requestApproval', request)).approvalId).toBe(approvalId);
    expect(await worker.call('renewAttempt', { attempt, operationId: newOperationId() })).toMatchObject({ ok: false, reason: 'STALE_AUTHORITY' });
    // ResumeJob cannot stand in for a decision.
    const resumed = await failureOf(harness.admission.resumeJob({ idempotencyKey: newIdempotencyKey('resume'), jobId }));
    expect([resumed.code, resumed.reason]).toEqual([Code.FailedPrecondition, 'ILLEGAL_TRANSITION']);
    const journal = await harness.journal(jobId);
    const requested = journal.find((event) => event.type === 'approval.requested');
    expect(requested?.payload).toMatchObject({ approval_id: approvalId });
    expect(String(requested?.payload?.['request_digest'])).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is refused while the job is CANCELLING, and changes nothing', async () => {
    const { worker, queue } = await harness.workerOnFreshQueue('cancelling');
    const job = await harness.submit({ queue });
    const [assignment] = await worker.claim({ waitMs: 3_000 });
    await harness.admission.cancelJob({ idempotencyKey: newIdempotencyKey('cancel'), jobId: job.id });
    const before = await harness.footprint(job.id);
    const answer = await worker.call('requestApproval', { attempt: attemptOf(assignment!), operationId: newOperationId(), prompt: 'ok?' });
    expect(answer).toMatchObject({ ok: false, code: Code.FailedPrecondition, reason: 'ILLEGAL_TRANSITION' });
    expect(await harness.footprint(job.id)).toEqual(before);
  });
});

describe('DecideApproval', () => {
  it('ALLOW re-queues the job: the next claim has a higher fence and the checkpoint; a replay answers the stored response', async () => {
    const { worker, jobId, approvalId, fence } = await waitingJob('allow');
    const key = newIdempotencyKey('allow');
    const first = await decide(jobId, approvalId, ApprovalDecision.ALLOW, key);
    expect(first.replayed).toBe(false);
    expect(first.job?.status).toBe(JobStatus.QUEUED);
    expect(first.job?.pendingApproval).toBeUndefined();
    const again = await decide(jobId, approvalId, ApprovalDecision.ALLOW, key);
    expect(again.replayed).toBe(true);
    expect(again.job).toEqual(first.job);
    const [next] = await worker.claim({ waitMs: 3_000 });
    expect(next?.envelope?.jobId).toBe(jobId);
    expect(next!.authority!.fence).toBeGreaterThan(fence);
    expect(next?.envelope?.checkpoint).toEqual({ step: 'before-ship' });
    expect(next?.envelope?.lastApproval).toMatchObject({ approvalId, decision: ApprovalDecision.ALLOW, prompt: 'Ship 5 units?', details: { amount: 5 } });
    const decided = (await harness.journal(jobId)).find((event) => event.type === 'approval.decided');
    expect(decided?.payload).toMatchObject({ approval_id: approvalId, decision: 'ALLOW', comment: 'looks right' });
    const { rows } = await harness.sql.query(`select digest, decision, job_id from ${HISTORY} where approval_id = $1`, [approvalId]);
    expect(rows).toEqual([{ digest: decided?.payload?.['digest'], decision: 'ALLOW', job_id: jobId }]);
  });

  it('DENY fails the job with class APPROVAL_DENIED', async () => {
    const { jobId, approvalId } = await waitingJob('deny');
    const { job } = await decide(jobId, approvalId, ApprovalDecision.DENY);
    expect(job?.status).toBe(JobStatus.FAILED);
    expect(job?.failure?.failureClass).toBe(FailureClass.APPROVAL_DENIED);
    expect((await harness.eventTypes(jobId)).slice(-2)).toEqual(['approval.decided', 'job.failed']);
  });

  it('refuses a second decision with a new key (APPROVAL_SPENT), and an unknown approval is NOT_FOUND', async () => {
    const { jobId, approvalId } = await waitingJob('twice');
    await decide(jobId, approvalId, ApprovalDecision.ALLOW);
    const twice = await failureOf(decide(jobId, approvalId, ApprovalDecision.DENY));
    expect([twice.code, twice.reason]).toEqual([Code.AlreadyExists, 'APPROVAL_SPENT']);
    const unknown = await failureOf(decide(jobId, 'apr_aaaaaaaaaaaaaaaaaaaaaaaaaa', ApprovalDecision.ALLOW));
    expect(unknown.code).toBe(Code.NotFound);
  });

  it('a coordinated rollback of the job tables cannot release a spent decision', async () => {
    const { jobId, approvalId } = await waitingJob('rollback');
    // A consistent copy of the job's rows (row, journal, head and count) before the decision.
    const copy = await harness.sql.query('select * from jobs where id = $1', [jobId]);
    const row = copy.rows[0] as Record<string, unknown>;
    await decide(jobId, approvalId, ApprovalDecision.ALLOW);
    expect((await harness.jobRow(jobId)).status).toBe('QUEUED');
    // Restore the copy: the job row as it was and the journal cut back to its count.
    const columns = Object.keys(row).filter((column) => column !== 'id' && column !== 'created_xid');
    await harness.sql.query('delete from job_events where job_id = $1 and sequence > $2', [jobId, row['event_count']]);
    await harness.sql.query(
      `update jobs set ${columns.map((column, index) => `${column} = $${index + 2}`).join(', ')} where id = $1`,
      [jobId, ...columns.map((column) => jsonbAsText(row[column]))],
    );
    expect((await harness.admission.getJob({ jobId })).job?.status).toBe(JobStatus.PAUSED);
    await harness.journal(jobId); // the restored journal is self-consistent
    const again = await failureOf(decide(jobId, approvalId, ApprovalDecision.ALLOW));
    expect([again.code, again.reason]).toEqual([Code.AlreadyExists, 'APPROVAL_SPENT']);
    const { job } = await harness.admission.getJob({ jobId });
    expect(job?.status).toBe(JobStatus.PAUSED);
    expect(job?.pendingApproval?.spent).toBe(true);
  });

  it('a failure between the burn and the journal write leaves the digest burned and the job paused; a retry is refused', async () => {
    const { jobId, approvalId } = await waitingJob('burn-fail');
    const before = await harness.footprint(jobId);
    // The journal write of this job's decision fails (a real failure inside the job transaction).
    await harness.sql.query(`
      create or replace function fail_decision() returns trigger language plpgsql as $$
      begin
        if new.type = 'approval.decided' and new.job_id = '${jobId}' then raise exception 'injected journal failure'; end if;
        return new;
      end $$;
      create trigger fail_decision before insert on job_events for each row execute function fail_decision();`);
    const key = newIdempotencyKey('burn-fail');
    try {
      const failed = await failureOf(decide(jobId, approvalId, ApprovalDecision.ALLOW, key));
      expect(failed.code).toBe(Code.Internal);
      expect(JSON.stringify(failed)).not.toContain('injected');
    } finally {
      await harness.sql.query('drop trigger fail_decision on job_events; drop function fail_decision();');
    }
    const burned = await harness.sql.query(`select decision from ${HISTORY} where approval_id = $1`, [approvalId]);
    expect(burned.rows).toEqual([{ decision: 'ALLOW' }]);
    const after = (await harness.footprint(jobId)) as { job: { pending_approval: Record<string, unknown> } };
    // Unchanged but for the spent mark: same status, revision and journal.
    expect(after.job.pending_approval['spent']).toBe(true);
    const { pending_approval: _before, ...restBefore } = (before as { job: Record<string, unknown> }).job;
    const { pending_approval: _after, ...restAfter } = after.job as unknown as Record<string, unknown>;
    expect({ ...(after as object), job: restAfter }).toEqual({ ...(before as object), job: restBefore });
    const retried = await failureOf(decide(jobId, approvalId, ApprovalDecision.ALLOW, key));
    expect([retried.code, retried.reason]).toEqual([Code.AlreadyExists, 'APPROVAL_SPENT']);
    const { job } = await harness.admission.getJob({ jobId });
    expect(job?.status).toBe(JobStatus.PAUSED);
    expect(job?.pendingApproval?.spent).toBe(true);
    expect(await harness.eventTypes(jobId)).not.toContain('approval.decided');
  });
});

describe('the approval history', () => {
  it('refuses UPDATE, DELETE and TRUNCATE from the state service role', async () => {
    const { jobId, approvalId } = await waitingJob('append-only');
    await decide(jobId, approvalId, ApprovalDecision.ALLOW);
    const state = new pg.Client({ connectionString: harness.cluster.databaseUrl });
    await state.connect();
    try {
      for (const statement of [
        `update ${HISTORY} set decision = 'DENY' where approval_id = '${approvalId}'`,
        `delete from ${HISTORY} where approval_id = '${approvalId}'`,
        `truncate ${HISTORY}`,
      ]) {
        await expect(state.query(statement)).rejects.toMatchObject({ code: '42501' });
      }
      const { rows } = await state.query(`select decision from ${HISTORY} where approval_id = $1`, [approvalId]);
      expect(rows).toEqual([{ decision: 'ALLOW' }]);
      const owner = await state.query(`select tableowner from pg_tables where schemaname = 'docket_approval_history'`);
      expect(owner.rows).toEqual([{ tableowner: 'docket_approval_history' }]);
    } finally {
      await state.end();
    }
  });

  it('grants an ordinary state role INSERT and SELECT only: it cannot rewrite the history or switch its triggers off', async () => {
    const role = `docket_state_${Math.random().toString(36).slice(2, 10)}`;
    await harness.sql.query(`create role ${role} login password 'state-role-secret'`);
    await harness.sql.query(`grant usage on schema docket_approval_history to ${role}; grant select, insert on ${HISTORY} to ${role}`);
    const url = new URL(harness.cluster.databaseUrl);
    url.username = role;
    url.password = 'state-role-secret';
    const ordinary = new pg.Client({ connectionString: url.toString() });
    await ordinary.connect();
    try {
      const digest = 'a'.repeat(64);
      await ordinary.query(`insert into ${HISTORY} (digest, approval_id, job_id, decision, decided_by) values ($1, 'apr_ordinaryroletest0000000', 'job_x0000000', 'ALLOW', 'x')`, [digest]);
      for (const statement of [
        `update ${HISTORY} set decision = 'DENY' where digest = '${digest}'`,
        `delete from ${HISTORY} where digest = '${digest}'`,
        `truncate ${HISTORY}`,
        `alter table ${HISTORY} disable trigger refuse_update_delete`,
        `set session_replication_role = replica`,
      ]) {
        await expect(ordinary.query(statement)).rejects.toMatchObject({ code: '42501' });
      }
    } finally {
      await ordinary.end();
    }
  });

  it('a journaled decision whose digest a superuser removed from the history reads as DATA_LOSS, on every page', async () => {
    const { jobId, approvalId } = await waitingJob('removed');
    await decide(jobId, approvalId, ApprovalDecision.ALLOW);
    await harness.journal(jobId);
    await harness.sql.query(`begin; set local session_replication_role = replica; delete from ${HISTORY} where approval_id = '${approvalId}'; commit;`);
    const events = clientFor((await import('@docket/proto/docket/events/v1/event_service_pb.js')).EventService, harness.cluster.events.url, harness.ownerToken);
    for (const afterSequence of [0n, 1n]) {
      const lost = await failureOf(events.readJobEvents({ jobId, afterSequence, pageSize: 1 }));
      expect([lost.code, lost.reason]).toEqual([Code.DataLoss, 'JOURNAL_CORRUPT']);
      expect(lost.metadata['anchor']).toBe('approval_history');
    }
  });
});

describe('ownership', () => {
  it("another user's DecideApproval, SendSignal and ReconcileSignals are NOT_FOUND, exactly like a missing job's", async () => {
    const { jobId, approvalId } = await waitingJob('foreign');
    const stranger = clientFor(AdmissionService, harness.cluster.admission.url, await harness.cluster.tokenFor('someone-else', 'user'));
    const missing = 'job_doesnotexist000000000000';
    const calls = (id: string) => [
      stranger.decideApproval({ idempotencyKey: newIdempotencyKey('x'), jobId: id, approvalId, decision: ApprovalDecision.ALLOW }),
      stranger.sendSignal({ idempotencyKey: newIdempotencyKey('x'), jobId: id, name: 'go', payload: {} }),
      stranger.reconcileSignals({ idempotencyKey: newIdempotencyKey('x'), jobId: id, action: 1 }),
    ];
    const foreign = await Promise.all(calls(jobId).map(failureOf));
    const absent = await Promise.all(calls(missing).map(failureOf));
    expect(foreign).toEqual(absent);
    for (const failure of foreign) expect(failure.code).toBe(Code.NotFound);
    expect((await harness.jobRow(jobId)).status).toBe('PAUSED');
  });
});

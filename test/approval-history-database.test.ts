import { Code } from '@connectrpc/connect';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApprovalDecision } from '@docket/proto/docket/common/v1/approval_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { failureOf } from './support/clients.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createTestDatabase } from './support/database.js';
import { newIdempotencyKey } from './support/keys.js';
import { ExecutionHarness } from './support/raw-worker-harness.js';

/*
 * DOCKET_APPROVAL_DATABASE_URL puts the approval history in a database of
 * its own: decisions are burned there and nowhere in the job database, and
 * every journal read checks them there.
 */

let harness: ExecutionHarness;
let historyUrl: string;

beforeAll(async () => {
  historyUrl = await createTestDatabase('approval history db');
  harness = await ExecutionHarness.start(startInProcessCluster, 'history-owner', {
    databaseUrl: await createTestDatabase('approval jobs db'),
    env: { state: { DOCKET_APPROVAL_DATABASE_URL: historyUrl } },
  });
});

afterAll(() => harness?.close());

describe('a separate approval database', () => {
  it('holds the burned decision; the job database holds no history at all', async () => {
    const { jobId, approvalId } = await harness.jobAwaitingApproval('separate', 'ok?');
    const { job: decided } = await harness.admission.decideApproval({ idempotencyKey: newIdempotencyKey('d'), jobId, approvalId, decision: ApprovalDecision.ALLOW });
    expect(decided?.status).toBe(JobStatus.QUEUED);

    const history = new pg.Client({ connectionString: historyUrl });
    await history.connect();
    try {
      const { rows } = await history.query('select job_id, decision from docket_approval_history.decisions where approval_id = $1', [approvalId]);
      expect(rows).toEqual([{ job_id: jobId, decision: 'ALLOW' }]);
      // Every read checks there: removing the burn (as a superuser) makes the journal DATA_LOSS.
      await history.query(`begin; set local session_replication_role = replica; delete from docket_approval_history.decisions where approval_id = '${approvalId}'; commit;`);
    } finally {
      await history.end();
    }
    const { rows: local } = await harness.sql.query("select count(*) as n from pg_tables where schemaname = 'docket_approval_history'");
    expect(Number(local[0]?.n)).toBe(0);
    const lost = await failureOf(harness.journal(jobId));
    expect([lost.code, lost.reason, lost.metadata['anchor']]).toEqual([Code.DataLoss, 'JOURNAL_CORRUPT', 'approval_history']);
  });
});

import { DocketError } from '@docket/contracts';
import type { ApprovalHistory } from '../db/approval-history.js';
import type { DecidedApprovalRow } from '../db/queries/job-events.js';

/**
 * Checks every `approval.decided` event of a job's journal against the
 * approval history: its digest must be burned there, for the same job,
 * approval and decision. The journal's hash chain cannot tell a decision
 * that a rewrite of the job tables invented (or restored) from one a human
 * made; the history, outside that rewrite domain, can tell that no such
 * decision was ever spent. A journaled decision the history does not hold
 * is DATA_LOSS, JOURNAL_CORRUPT, with the event's sequence and
 * `anchor: approval_history` in the metadata, on every read of the journal
 * (not only of the page that holds it). `decided` is every such event of
 * the journal, read in the same snapshot as the page (`readJournalWindow`).
 */
export async function verifyJournaledApprovals(approvals: ApprovalHistory, jobId: string, decided: readonly DecidedApprovalRow[]): Promise<void> {
  if (decided.length === 0) return;
  const digests = decided.map((event) => String(event.payload['digest'] ?? ''));
  const burned = await approvals.findDigests(digests.filter((digest) => /^[0-9a-f]{64}$/.test(digest)));
  decided.forEach((event, index) => {
    const found = burned.get(digests[index] ?? '');
    const matches =
      found !== undefined &&
      found.job_id === jobId &&
      found.approval_id === event.payload['approval_id'] &&
      found.decision === event.payload['decision'];
    if (!matches) {
      throw new DocketError('JOURNAL_CORRUPT', 'the job journal records an approval decision the approval history does not hold', {
        metadata: { job_id: jobId, sequence: String(event.sequence), anchor: 'approval_history' },
      });
    }
  });
}

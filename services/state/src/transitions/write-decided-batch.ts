import type pg from 'pg';
import { writeJobSet, writeJobSetAndCommit } from '../db/queries/job-write-sets.js';
import { moveSignals } from '../db/queries/signals.js';
import { writeEffects } from '../db/queries/effects.js';
import { endsAParent, settleEndedParents } from './dependency-settlement.js';
import type { JobWriteSet } from './job-write-set.js';
import { journalCorrupt } from '../journal/journal-verification.js';
import { inboxDisagrees } from '../signals/signal-inbox.js';
import { concurrentOperation } from '../worker-calls/worker-operation.js';

/**
 * Writes a decided batch (`writeJobSet`) and refuses to let it commit when
 * a journal's stored head moved (JOURNAL_CORRUPT for that job; the batch is
 * then decided again around it) or an operation id was recorded
 * concurrently (UNAVAILABLE; a retry replays it). Signal and effect
 * changes and the settlement of ended parents' children, which only some
 * batches carry, take one more statement each; a batch without them (most
 * claims and reports) sends its COMMIT with the write
 * (`writeJobSetAndCommit`), so nothing may follow this call in the
 * transaction.
 */
export async function writeDecidedBatch(client: pg.ClientBase, writes: JobWriteSet, now: Date): Promise<void> {
  const last = writes.signalMoves.length === 0 && writes.effects.size === 0 && !endsAParent(writes.changes);
  const written = await (last ? writeJobSetAndCommit : writeJobSet)(client, writes, now);
  const [corrupt] = written.corruptJournals;
  if (corrupt !== undefined) {
    const job = writes.jobs.get(corrupt);
    throw journalCorrupt(corrupt, writes.expectedHeads.get(corrupt)?.sequence ?? job?.event_count ?? 0n);
  }
  if (!written.allRecorded) throw concurrentOperation();
  if (!(await moveSignals(client, writes.signalMoves))) throw inboxDisagrees();
  await writeEffects(client, [...writes.effects.values()]);
  await settleEndedParents(client, writes.changes, now);
}

import type pg from 'pg';
import { writeJobSet } from '../db/queries/job-write-sets.js';
import { moveSignals } from '../db/queries/signals.js';
import { writeEffects } from '../db/queries/effects.js';
import { settleEndedParents } from './dependency-settlement.js';
import type { JobWriteSet } from './job-write-set.js';
import { journalCorrupt } from '../journal/journal-verification.js';
import { inboxDisagrees } from '../signals/signal-inbox.js';
import { concurrentOperation } from '../worker-calls/worker-operation.js';

/**
 * Writes a decided batch (`writeJobSet`) and refuses to let it commit when
 * a journal's stored head moved (JOURNAL_CORRUPT for that job; the batch is
 * then decided again around it) or an operation id was recorded
 * concurrently (UNAVAILABLE; a retry replays it). Signal and effect
 * changes, which only some batches carry, take one more statement each.
 */
export async function writeDecidedBatch(client: pg.ClientBase, writes: JobWriteSet, now: Date): Promise<void> {
  const written = await writeJobSet(client, writes, now);
  if (!(await moveSignals(client, writes.signalMoves))) throw inboxDisagrees();
  await writeEffects(client, [...writes.effects.values()]);
  const [corrupt] = written.corruptJournals;
  if (corrupt !== undefined) {
    const job = writes.jobs.get(corrupt);
    throw journalCorrupt(corrupt, writes.expectedHeads.get(corrupt)?.sequence ?? job?.event_count ?? 0n);
  }
  if (!written.allRecorded) throw concurrentOperation();
  await settleEndedParents(client, writes.changes, now);
}

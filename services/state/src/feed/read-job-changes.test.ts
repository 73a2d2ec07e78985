import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@docket/service-kit';
import { createMigratedTestDatabase } from '../../../../test/support/database.js';
import { openDatabase } from '../db/database.js';
import { prepareSchema } from '../db/prepare-schema.js';
import type { Database } from '../db/tables/index.js';
import { readJobChanges, type ChangeBatch } from './read-job-changes.js';

/*
 * The feed read the events process walks: one statement gives the horizon,
 * the entries below it after a position, and whether more are held back.
 */

let db: Kysely<Database>;
let pool: pg.Pool;

beforeAll(async () => {
  ({ db, pool } = openDatabase({ connectionString: await createMigratedTestDatabase('read job changes'), maxConnections: 4, logger: createLogger('state', () => {}) }));
  await prepareSchema(db, createLogger('state', () => {}));
});

afterAll(async () => {
  await db?.destroy();
});

const admin = { subject: 'root', admin: true };
const everything = { statuses: [], queue: '' };

/** Appends one entry per job to the feed in the transaction `client` has open. */
async function append(client: pg.PoolClient, owner: string, ...jobIds: string[]): Promise<void> {
  for (const jobId of jobIds) {
    await client.query(`insert into job_changes (job_id, owner, queue, revision, status, lifecycle, changed_at) values ($1, $2, 'q', 1, 'QUEUED', 'LIVE', now())`, [jobId, owner]);
  }
}

/**
 * Reads every 50 ms until `done` holds of a batch, 200 tries at most (other databases' transactions on the shared
 * server may hold the horizon back a moment).
 */
async function readUntil(read: () => Promise<ChangeBatch>, done: (batch: ChangeBatch) => boolean): Promise<ChangeBatch> {
  for (let attempt = 0; ; attempt += 1) {
    const batch = await read();
    if (done(batch) || attempt === 200) return batch;
    // Real time: the poll interval of this wait.
    await sleep(50);
  }
}

describe('readJobChanges', () => {
  it('holds back what a running transaction could still precede, then gives everything in (transaction, entry) order', async () => {
    const head = await readJobChanges(db, admin, undefined, everything, 10);
    expect(head.changes).toEqual([]);
    const first = await pool.connect();
    const second = await pool.connect();
    try {
      // The first transaction takes its id first but commits last.
      await first.query('begin');
      await append(first, 'ann', 'job_a');
      await second.query('begin');
      await append(second, 'bob', 'job_b', 'job_c');
      await second.query('commit');

      const held = await readJobChanges(db, admin, head.position, everything, 10);
      expect([held.changes, held.position, held.heldBack]).toEqual([[], head.position, true]);

      await first.query('commit');
      const all = await readUntil(
        () => readJobChanges(db, admin, head.position, everything, 10),
        (batch) => batch.changes.length === 3,
      );
      expect(all.changes.map((change) => change.job_id)).toEqual(['job_a', 'job_b', 'job_c']);
      expect(all.heldBack).toBe(false);
      expect(all.position).toEqual(all.changes[2]!.position);
      expect(all.changes[0]!.position.transactionId).toBeLessThan(all.changes[1]!.position.transactionId);

      // A full batch stops at the limit; the next one starts right after it.
      const page = await readJobChanges(db, admin, head.position, everything, 2);
      expect([page.changes.map((change) => change.job_id), page.position, page.heldBack]).toEqual([['job_a', 'job_b'], all.changes[1]!.position, false]);
      const rest = await readJobChanges(db, admin, page.position, everything, 2);
      expect([rest.changes.map((change) => change.job_id), rest.position, rest.heldBack]).toEqual([['job_c'], all.position, false]);

      // A reader passes over what it may not see, and its position still moves past it.
      const ann = await readJobChanges(db, { subject: 'ann', admin: false }, head.position, everything, 10);
      expect([ann.changes.map((change) => change.job_id), ann.position]).toEqual([['job_a'], all.position]);
    } finally {
      await first.query('rollback').catch(() => undefined);
      first.release();
      second.release();
    }
  });
});

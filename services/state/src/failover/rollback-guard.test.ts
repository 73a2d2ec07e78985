import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDocketError, parseIdempotencyKey, parseRequestDigest, validateJobSpec } from '@docket/contracts';
import { createLogger } from '@docket/service-kit';
import { createMigratedTestDatabase } from '../../../../test/support/database.js';
import { admitJobs, type AdmitJobCommand } from '../admission/admit-jobs.js';
import { openDatabase } from '../db/database.js';
import { inWriteTransaction } from '../db/write-transaction.js';
import { RollbackGuard } from './rollback-guard.js';
import { readWatermarkFile, writeWatermarkFile } from './watermark-file.js';

/*
 * The rollback guard on a real PostgreSQL (one server, no standby, so
 * every commit is unconfirmed): group commits record their positions and
 * admitted jobs, the watermark survives in its file, and a database that
 * is behind what a replica acknowledged (here: a watermark file from
 * "the future") trips the guard: every connection is refused with
 * DATABASE_ROLLED_BACK, health fails, and AcceptRollback reports the lost
 * jobs, then serves again.
 */

const logger = createLogger('state', () => {});
let url: string;
let dir: string;

beforeAll(async () => {
  url = await createMigratedTestDatabase('rollback guard');
  dir = await mkdtemp(join(tmpdir(), 'docket-rollback-guard-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function admission(key: string): AdmitJobCommand {
  return {
    subject: 'ada',
    operation: 'docket.admission.v1.AdmissionService/SubmitJob',
    key: parseIdempotencyKey(key),
    digest: parseRequestDigest('a'.repeat(64)),
    ttlMs: 86_400_000,
    spec: validateJobSpec({ queue: 'default', input: {}, label: '', priority: 0, runAfter: undefined, maxAttempts: 0, initialBackoffMs: undefined, maxBackoffMs: undefined, lostAttemptPolicy: 'UNSPECIFIED' }),
  };
}

const reasonOf = (error: unknown): string | undefined => (isDocketError(error) ? error.reason : undefined);

describe('RollbackGuard', () => {
  it('records what group commits acknowledged, with their admitted jobs, in its file', async () => {
    const file = join(dir, 'records.json');
    const guard = await RollbackGuard.open(file, logger);
    const { db, pool } = openDatabase({ connectionString: url, maxConnections: 2, guard, logger });
    try {
      guard.arm();
      const [outcome] = await admitJobs(pool, [admission('guard-records-000001')]);
      expect(outcome?.ok).toBe(true);
      const jobId = outcome?.ok ? outcome.value.job.id : '';
      await guard.probe(pool);
      await guard.close();
      const saved = await readWatermarkFile(file);
      expect(saved).toMatchObject({ version: 1, timeline: 1, systemIdentifier: expect.stringMatching(/^\d+$/) });
      expect(saved?.window.flatMap((entry) => entry.jobIds)).toEqual([jobId]);
      const { rows } = await pool.query<{ lsn: string }>('select pg_current_wal_flush_lsn()::text as lsn');
      // The acknowledged position is an upper bound of the commit, and no later than the server's position now.
      const { rows: order } = await pool.query<{ ok: boolean }>('select $1::pg_lsn <= $2::pg_lsn and $1::pg_lsn > $3::pg_lsn as ok', [saved?.window[0]?.lsn, rows[0]?.lsn, '0/0']);
      expect(order[0]?.ok).toBe(true);
    } finally {
      await db.destroy();
    }
  });

  it('does not trip when other connections record later positions while a new connection is judged (a busy pool growing)', async () => {
    const guard = await RollbackGuard.open(undefined, logger);
    const { db, pool } = openDatabase({ connectionString: url, maxConnections: 4, guard, logger });
    const opening = new pg.Client({ connectionString: url });
    try {
      guard.arm();
      await admitJobs(pool, [admission('guard-race-0000001')]);
      await opening.connect();
      // A connection whose lineage statement answers, and then, before the guard judges that answer, a group
      // commit elsewhere is acknowledged and bounded by a reading taken after it: the answer is now older than
      // the acknowledged position, on a database that lost nothing.
      let interleaved = false;
      const racing = {
        query: async (...args: Parameters<pg.Client['query']>) => {
          const result = await (opening.query as (...a: unknown[]) => Promise<unknown>)(...args);
          if (!interleaved) {
            interleaved = true;
            await admitJobs(pool, [admission('guard-race-0000002')]);
            await inWriteTransaction(pool, async () => undefined);
          }
          return result;
        },
      } as unknown as pg.ClientBase;
      await guard.checkConnection(racing);
      expect(interleaved).toBe(true);
      expect(guard.rollback).toBeUndefined();
      await guard.probe(pool);
      expect(guard.refusal()).toBeUndefined();
    } finally {
      await opening.end();
      await guard.close();
      await db.destroy();
    }
  });

  it('trips on a database behind what was acknowledged: refuses every connection, fails health, reports the lost jobs, and serves again once accepted', async () => {
    const seed = join(dir, 'seed.json');
    const seeding = await RollbackGuard.open(seed, logger);
    const seeded = openDatabase({ connectionString: url, maxConnections: 2, guard: seeding, logger });
    let keptJob: string;
    try {
      const [outcome] = await admitJobs(seeded.pool, [admission('guard-kept-0000001')]);
      keptJob = outcome?.ok ? outcome.value.job.id : '';
      await seeding.close();
    } finally {
      await seeded.db.destroy();
    }
    const saved = (await readWatermarkFile(seed))!;
    // What a replica would have saved had it acknowledged far beyond where this database is.
    const file = join(dir, 'ahead.json');
    await writeWatermarkFile(file, {
      ...saved,
      acknowledgedLsn: 'FF/0',
      unconfirmedLsn: 'FF/0',
      window: [...saved.window, { lsn: 'FE/0', jobIds: ['job_lostlostlostlostlostlostlo'] }],
    });

    const guard = await RollbackGuard.open(file, logger);
    const { db, pool } = openDatabase({ connectionString: url, maxConnections: 2, guard, logger });
    try {
      // Before it is armed (schema preparation), connections are served.
      expect((await sql<{ one: number }>`select 1 as one`.execute(db)).rows).toEqual([{ one: 1 }]);
      expect(guard.rollback).toMatchObject({ cause: 'rewound', forkSource: 'current_position' });
      guard.arm();
      await expect(sql`select 1`.execute(db)).rejects.toSatisfy((error) => reasonOf(error) === 'DATABASE_ROLLED_BACK');
      await expect(inWriteTransaction(pool, async () => 1)).rejects.toSatisfy((error) => reasonOf(error) === 'DATABASE_ROLLED_BACK');
      await expect(guard.probe(pool)).rejects.toSatisfy((error) => reasonOf(error) === 'DATABASE_ROLLED_BACK');

      const dryRun = await guard.acceptRollback(pool, true);
      expect(dryRun).toMatchObject({ rolledBack: true, accepted: false, lostJobIds: ['job_lostlostlostlostlostlostlo'], windowTruncated: false });
      // The kept job's commit is at or below the position the database has: not in the window above the fork point.
      expect(dryRun.lostJobIds).not.toContain(keptJob!);
      expect(guard.refusal()?.reason).toBe('DATABASE_ROLLED_BACK');

      const accepted = await guard.acceptRollback(pool, false);
      expect(accepted).toMatchObject({ rolledBack: true, accepted: true, lostJobIds: ['job_lostlostlostlostlostlostlo'] });
      expect(guard.refusal()).toBeUndefined();
      expect((await sql<{ one: number }>`select 1 as one`.execute(db)).rows).toEqual([{ one: 1 }]);
      await guard.probe(pool);
      expect(await guard.acceptRollback(pool, false)).toMatchObject({ rolledBack: false, accepted: false });
      // The file starts afresh at the database's position.
      expect((await readWatermarkFile(file))?.acknowledgedLsn).not.toBe('FF/0');
    } finally {
      await guard.close();
      await db.destroy();
    }
  });
});

import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigratedTestDatabase } from '../../../../test/support/database.js';
import { openSql } from '../../../../test/support/sql.js';

/*
 * The CHECK constraints on digests, hashes and keys (migration 0017 states
 * them without a bounded repetition, which PostgreSQL matched slowly):
 * exactly 64 lowercase hex characters for a digest or hash, 1 to 128
 * printable ASCII characters without spaces for a key. Each value is
 * written into a real row, and every refusal must come from the named
 * constraint.
 */

const HEX = 'abcdef0123456789'.repeat(4);
const GOOD_DIGESTS = [HEX, '0'.repeat(64), 'f'.repeat(64)];
const BAD_DIGESTS = ['', HEX.slice(1), `${HEX}0`, HEX.toUpperCase(), `${HEX.slice(1)}g`, `${HEX.slice(1)} `, `${HEX.slice(2)}é`, `${HEX.slice(1)}é`];
const GOOD_KEYS = ['!', '~', 'tenant-a:7', '~'.repeat(128), String.fromCharCode(...Array.from({ length: 94 }, (_, index) => 33 + index))];
const BAD_KEYS = ['', ' ', 'a b', 'x'.repeat(129), 'é', `${'x'.repeat(126)}é`, 'tab\tkey', '\u007f'];

let sql: pg.Client;
let jobId: string;

beforeAll(async () => {
  sql = await openSql(await createMigratedTestDatabase('format checks'));
  jobId = 'job_format_checks';
  await sql.query(
    `insert into jobs (id, owner, queue, label, input, priority, revision, status, lifecycle, request_digest,
                       max_attempts, initial_backoff_ms, max_backoff_ms, lost_attempt_policy, event_count, head_hash, created_at, updated_at)
     values ($1, 'alice', 'checks', '', '{}', 0, 1, 'QUEUED', 'ACTIVE', $2, 3, 1000, 60000, 'RETRY', 1, $2, now(), now())`,
    [jobId, HEX],
  );
});

afterAll(async () => {
  await sql?.end();
});

/** The constraint an UPDATE of one column of the job to `value` violates, or undefined if it is accepted (the change is rolled back either way). */
async function refusalOf(statement: string, values: unknown[]): Promise<string | undefined> {
  await sql.query('begin');
  try {
    await sql.query(statement, values);
    return undefined;
  } catch (error) {
    expect((error as { code?: string }).code).toBe('23514');
    return (error as { constraint?: string }).constraint;
  } finally {
    await sql.query('rollback');
  }
}

const updateJob = (column: string, value: string) => refusalOf(`update jobs set ${column} = $2 where id = $1`, [jobId, value]);

describe('the format checks', () => {
  for (const column of ['head_hash', 'request_digest']) {
    it(`take exactly 64 lowercase hex characters as a job's ${column}`, async () => {
      for (const value of GOOD_DIGESTS) expect(await updateJob(column, value), value).toBeUndefined();
      for (const value of BAD_DIGESTS) expect(await updateJob(column, value), JSON.stringify(value)).toBe(`jobs_${column}_check`);
    });
  }

  for (const column of ['unique_key', 'concurrency_key']) {
    it(`take 1 to 128 printable ASCII characters without spaces as a job's ${column}`, async () => {
      for (const value of GOOD_KEYS) expect(await updateJob(column, value), value).toBeUndefined();
      for (const value of BAD_KEYS) expect(await updateJob(column, value), JSON.stringify(value)).toBe(`jobs_${column}_check`);
    });
  }

  it('take exactly 64 lowercase hex characters as an idempotency record digest', async () => {
    const record = (digest: string) =>
      refusalOf(
        `insert into idempotency_records (subject, operation, key_hash, request_digest, job_id, response, created_at, expires_at)
         values ('alice', 'SubmitJob', '\\x01', $1, null, '\\x', now(), now() + interval '1 day')`,
        [digest],
      );
    for (const value of GOOD_DIGESTS) expect(await record(value), value).toBeUndefined();
    for (const value of BAD_DIGESTS) expect(await record(value), JSON.stringify(value)).toBe('idempotency_records_request_digest_check');
  });
});

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createTestDatabase, testDatabaseName } from './database.js';

async function currentDatabase(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>('select current_database() as name');
    return rows[0]?.name ?? '';
  } finally {
    await client.end();
  }
}

describe('testDatabaseName', () => {
  it('derives a safe identifier from the label with a random suffix', () => {
    expect(testDatabaseName('Admission: SubmitJob replays!')).toMatch(/^t_admission_submitjob_replays_[0-9a-f]{8}$/);
    expect(testDatabaseName('***')).toMatch(/^t_db_[0-9a-f]{8}$/);
    expect(testDatabaseName('x'.repeat(200)).length).toBeLessThanOrEqual(63);
    expect(testDatabaseName('same')).not.toBe(testDatabaseName('same'));
  });
});

describe('createTestDatabase', () => {
  it('creates distinct empty databases on the shared server, concurrently', async () => {
    const urls = await Promise.all(Array.from({ length: 5 }, () => createTestDatabase('database test')));
    const names = await Promise.all(urls.map(currentDatabase));
    expect(new Set(names).size).toBe(5);
    for (const name of names) expect(name).toMatch(/^t_database_test_[0-9a-f]{8}$/);

    const client = new pg.Client({ connectionString: urls[0] });
    await client.connect();
    try {
      const { rows } = await client.query(`select 1 from pg_tables where schemaname = 'public'`);
      expect(rows).toHaveLength(0);
    } finally {
      await client.end();
    }
  });
});

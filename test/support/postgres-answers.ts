import pg from 'pg';

/**
 * Whether a PostgreSQL (or a proxy or pooler in front of one) at `url`
 * answers `select 1` within a second now: for waiting until a server a
 * test started is ready. A refusal is the answer "not yet", not an error.
 */
export async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    // A client that never connected has nothing to close; its refusal was the answer.
    await client.end().catch(() => undefined);
  }
}

import pg from 'pg';

/** SQLSTATE 42P04: the database already exists. */
const DUPLICATE_DATABASE = '42P04';

/** Options for {@link createDatabase}. */
export interface CreateDatabaseOptions {
  /**
   * A database to copy (`CREATE DATABASE ... TEMPLATE`) instead of the
   * server's empty `template1`. Nobody may be connected to it while it is
   * copied; copies of one template may be taken concurrently.
   */
  readonly template?: string;
}

/**
 * Creates database `name` on the server behind `adminUrl` unless it already
 * exists, and returns a URL for it (the admin URL with its path replaced).
 * Runs `CREATE DATABASE "name"` with the identifier quoted, so any name up to
 * Postgres' 63-byte limit is accepted as is.
 */
export async function createDatabase(adminUrl: string, name: string, options: CreateDatabaseOptions = {}): Promise<string> {
  if (name.length === 0 || Buffer.byteLength(name) > 63) {
    throw new Error(`database name must be 1 to 63 bytes, got ${JSON.stringify(name)}`);
  }
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const template = options.template === undefined ? '' : ` TEMPLATE ${client.escapeIdentifier(options.template)}`;
    await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}${template}`);
  } catch (error) {
    if ((error as { code?: unknown }).code !== DUPLICATE_DATABASE) throw error;
  } finally {
    await client.end();
  }
  return databaseUrl(adminUrl, name);
}

/** `adminUrl` pointing at database `name` instead, keeping credentials and query. */
export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${encodeURIComponent(name)}`;
  return url.toString();
}

import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Migration } from './migrations/index.js';

/** Serialises migrators of every replica that starts at once. */
const MIGRATION_LOCK_KEY = 0x646f636b; // "dock"
const MARKER_TABLE = 'docket_schema_migrations';

/**
 * The database is not one this build may run against. The message says why
 * in terms an operator can act on and never includes connection details.
 */
export class SchemaRefusal extends Error {
  override readonly name = 'SchemaRefusal';
}

/** What {@link migrateDatabase} did. */
export interface MigrationReport {
  readonly applied: readonly string[];
  readonly current: string;
}

/**
 * Brings the schema up to the newest known migration, under a session
 * advisory lock so that many replicas may start at once. Refuses, changing
 * nothing, a database that:
 * - has Docket tables but no migration marker (created or damaged by hand),
 * - records a migration this build does not know (newer than the code),
 * - records known migrations out of order or with another checksum,
 * - lacks a relation that a recorded migration created (half-migrated).
 * Each pending migration commits in its own transaction with its marker row.
 */
export async function migrateDatabase<DB>(db: Kysely<DB>, migrations: readonly Migration[]): Promise<MigrationReport> {
  return db.connection().execute(async (connection) => {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`.execute(connection);
    try {
      const recorded = await readMarker(connection, migrations);
      await checkRelations(connection, migrations.slice(0, recorded.length));
      const applied: string[] = [];
      for (const migration of migrations.slice(recorded.length)) {
        await connection.transaction().execute(async (tx) => {
          if (recorded.length === 0 && applied.length === 0) {
            await sql.raw(
              `create table ${MARKER_TABLE} (id text primary key, checksum text not null, applied_at timestamptz not null default now())`,
            ).execute(tx);
          }
          await sql.raw(migration.sql).execute(tx);
          await sql`insert into ${sql.table(MARKER_TABLE)} (id, checksum) values (${migration.id}, ${checksumOf(migration)})`.execute(tx);
        });
        applied.push(migration.id);
      }
      const last = migrations.at(-1);
      return { applied, current: last?.id ?? '' };
    } finally {
      await sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.execute(connection);
    }
  });
}

/** Returns the recorded migration ids after checking them against the code. */
async function readMarker<DB>(db: Kysely<DB>, migrations: readonly Migration[]): Promise<string[]> {
  const marker = await sql<{ exists: boolean }>`select to_regclass(${MARKER_TABLE}) is not null as exists`.execute(db);
  if (!marker.rows[0]?.exists) {
    const foreign = await presentRelations(db, migrations.flatMap((m) => m.creates));
    if (foreign.length > 0) {
      throw new SchemaRefusal(
        `the database has Docket tables (${foreign.join(', ')}) but no ${MARKER_TABLE} marker; refusing to start rather than guess its version`,
      );
    }
    return [];
  }
  const rows = await sql<{ id: string; checksum: string }>`select id, checksum from ${sql.table(MARKER_TABLE)} order by id`.execute(db);
  const known = new Map(migrations.map((m, index) => [m.id, { migration: m, index }]));
  rows.rows.forEach((row, position) => {
    const entry = known.get(row.id);
    if (!entry) {
      throw new SchemaRefusal(
        `the database schema is at migration ${row.id}, which this build does not know (newest known: ${migrations.at(-1)?.id ?? 'none'}); it was migrated by a newer Docket, refusing to start`,
      );
    }
    if (entry.index !== position) {
      throw new SchemaRefusal(`the database records migration ${row.id} out of order; the schema is inconsistent, refusing to start`);
    }
    if (checksumOf(entry.migration) !== row.checksum) {
      throw new SchemaRefusal(`migration ${row.id} recorded in the database differs from this build's; refusing to start`);
    }
  });
  return rows.rows.map((row) => row.id);
}

async function checkRelations<DB>(db: Kysely<DB>, recorded: readonly Migration[]): Promise<void> {
  const expected = recorded.flatMap((m) => m.creates);
  const present = new Set(await presentRelations(db, expected));
  const missing = expected.filter((name) => !present.has(name));
  if (missing.length > 0) {
    throw new SchemaRefusal(
      `the database is half-migrated: recorded migrations created ${missing.join(', ')}, which are missing; refusing to start`,
    );
  }
}

async function presentRelations<DB>(db: Kysely<DB>, names: readonly string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const rows = await sql<{ name: string }>`
    select name from unnest(${names}::text[]) as name where to_regclass(name) is not null`.execute(db);
  return rows.rows.map((row) => row.name);
}

function checksumOf(migration: Migration): string {
  return createHash('sha256').update(migration.sql).digest('hex');
}

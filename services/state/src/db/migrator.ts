import { createHash } from 'node:crypto';
import { CompiledQuery, sql, type Kysely } from 'kysely';
import type { Migration } from './migrations/index.js';
import { withoutStatementLimit } from './statement-budget.js';
import { EMPTY_SCHEMA, SCHEMA_SHAPE_QUERY, schemaDifferences, searchPathFor, type SchemaShape, type SchemaSnapshot } from './schema-snapshot.js';

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
 * - has Docket tables but no migration marker, or an empty one (created or
 *   damaged by hand),
 * - records a migration this build does not know (newer than the code),
 * - records known migrations out of order or with another checksum,
 * - lacks a relation that a recorded migration created (half-migrated), or
 *   has one that only an unrecorded migration creates (a damaged marker),
 * - with `snapshot`, differs in any column, constraint, index, trigger or
 *   function from the snapshot once migrated ({@link schemaDifferences}).
 * The pending migrations, their marker rows and the snapshot comparison are
 * one transaction: a start-up either leaves a schema that matches the
 * snapshot or leaves the database exactly as it found it.
 */
export async function migrateDatabase<DB>(
  db: Kysely<DB>,
  migrations: readonly Migration[],
  snapshot?: SchemaSnapshot,
): Promise<MigrationReport> {
  const current = migrations.at(-1)?.id ?? '';
  if (snapshot && snapshot.version !== current) {
    throw new SchemaRefusal(
      `this build's schema snapshot is for migration ${snapshot.version || 'none'}, not its newest migration ${current || 'none'}; the build is inconsistent (regenerate the snapshot), refusing to start`,
    );
  }
  // Waiting for another replica's migrations, and the migrations themselves, may rightly take long.
  return withoutStatementLimit(() => db.connection().execute(async (connection) => {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`.execute(connection);
    try {
      const marker = await readMarker(connection, migrations);
      const pending = migrations.slice(marker.recorded.length);
      // At the current version the snapshot names exactly what is missing
      // (a column whose drop took an index with it, say), so the coarser
      // relation check serves only a schema that still has steps to take.
      if (pending.length > 0 || !snapshot) await checkRecordedRelations(connection, migrations, marker);
      await checkUnrecordedRelations(connection, migrations, marker);
      await connection.transaction().execute(async (tx) => {
        // A migration (an index build on a large table) may take longer than
        // the pool's default statement_timeout; it runs under the advisory
        // lock, not for a caller with a deadline.
        if (pending.length > 0) await sql`set local statement_timeout = 0`.execute(tx);
        if (!marker.exists && pending.length > 0) {
          await sql.raw(
            `create table ${MARKER_TABLE} (id text primary key, checksum text not null, applied_at timestamptz not null default now())`,
          ).execute(tx);
        }
        for (const migration of pending) {
          await sql.raw(migration.sql).execute(tx);
          await sql`insert into ${sql.table(MARKER_TABLE)} (id, checksum) values (${migration.id}, ${checksumOf(migration)})`.execute(tx);
        }
        if (snapshot) await checkAgainstSnapshot(tx, snapshot);
      });
      return { applied: pending.map((m) => m.id), current };
    } finally {
      await sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.execute(connection);
    }
  }));
}

/** What the marker says: whether the table exists and the ids it records, checked against the code. */
interface Marker {
  readonly exists: boolean;
  readonly recorded: readonly string[];
}

/** Returns the recorded migration ids after checking them against the code. */
async function readMarker<DB>(db: Kysely<DB>, migrations: readonly Migration[]): Promise<Marker> {
  const marker = await sql<{ exists: boolean }>`select to_regclass(${MARKER_TABLE}) is not null as exists`.execute(db);
  if (!marker.rows[0]?.exists) {
    const foreign = await presentRelations(db, migrations.flatMap((m) => m.creates));
    if (foreign.length > 0) {
      throw new SchemaRefusal(
        `the database has Docket tables (${foreign.join(', ')}) but no ${MARKER_TABLE} marker; refusing to start rather than guess its version`,
      );
    }
    return { exists: false, recorded: [] };
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
  return { exists: true, recorded: rows.rows.map((row) => row.id) };
}

/** Refuses a schema that lacks a relation a recorded migration created (half-migrated). */
async function checkRecordedRelations<DB>(db: Kysely<DB>, migrations: readonly Migration[], marker: Marker): Promise<void> {
  const expected = migrations.slice(0, marker.recorded.length).flatMap((m) => m.creates);
  const present = new Set(await presentRelations(db, expected));
  const missing = expected.filter((name) => !present.has(name));
  if (missing.length > 0) {
    throw new SchemaRefusal(
      `the database is half-migrated: recorded migrations created ${missing.join(', ')}, which are missing; refusing to start`,
    );
  }
}

/**
 * Refuses a schema that has a relation only a migration not yet recorded
 * creates: an emptied or truncated marker, which would otherwise run
 * `create table` against existing tables.
 */
async function checkUnrecordedRelations<DB>(db: Kysely<DB>, migrations: readonly Migration[], marker: Marker): Promise<void> {
  const unrecorded = await presentRelations(db, migrations.slice(marker.recorded.length).flatMap((m) => m.creates));
  if (unrecorded.length === 0) return;
  if (marker.recorded.length === 0) {
    throw new SchemaRefusal(
      `the migrations marker table ${MARKER_TABLE} is empty but Docket tables exist (${listed(unrecorded)}); refusing to start rather than guess its version`,
    );
  }
  throw new SchemaRefusal(
    `the database records migrations up to ${marker.recorded.at(-1)} but has relations that only later migrations create (${listed(unrecorded)}); the marker is damaged, refusing to start`,
  );
}

/** The first few names, and how many more, so a refusal stays one readable line. */
function listed(names: readonly string[]): string {
  return names.length > 4 ? `${names.slice(0, 4).join(', ')} and ${names.length - 4} more` : names.join(', ');
}

/** At most this many differences are named in a refusal; the rest are counted. */
const NAMED_DIFFERENCES = 6;

/**
 * Compares the schema the migrations left (the role's current schema) with
 * the snapshot, in one catalog query inside `tx`, and refuses on any
 * difference, naming the first few.
 */
async function checkAgainstSnapshot<DB>(tx: Kysely<DB>, snapshot: SchemaSnapshot): Promise<void> {
  const differences = schemaDifferences(snapshot.docket, await readDocketSchemaShape(tx));
  if (differences.length > 0) {
    throw new SchemaRefusal(`the database schema differs from this build's (migration ${snapshot.version}): ${summarise(differences)}; refusing to start`);
  }
}

/**
 * The shape of Docket's schema (the role's `current_schema()`) as it
 * stands, by {@link SCHEMA_SHAPE_QUERY}. Call it inside a transaction: it
 * sets `search_path` for that transaction only, so definitions render the
 * same whatever the role's own search path.
 */
export async function readDocketSchemaShape<DB>(tx: Kysely<DB>): Promise<SchemaShape> {
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(tx);
  const schema = rows[0]?.schema ?? 'public';
  await sql`select set_config('search_path', ${searchPathFor(schema)}, true)`.execute(tx);
  const result = await tx.executeQuery<{ shape: SchemaShape }>(CompiledQuery.raw(SCHEMA_SHAPE_QUERY, [schema]));
  return result.rows[0]?.shape ?? EMPTY_SCHEMA;
}

/** The first {@link NAMED_DIFFERENCES} differences, `; `-separated, and how many more. */
export function summarise(differences: readonly string[]): string {
  const named = differences.slice(0, NAMED_DIFFERENCES).join('; ');
  const more = differences.length - NAMED_DIFFERENCES;
  return more > 0 ? `${named}; and ${more} more` : named;
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

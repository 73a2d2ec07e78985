import type { Kysely } from 'kysely';
import type { Logger } from '@docket/service-kit';
import { MIGRATIONS } from './migrations/index.js';
import { SchemaRefusal, migrateDatabase, type MigrationReport } from './migrator.js';
import { SCHEMA_SNAPSHOT } from './schema-snapshot.generated.js';
import type { Database } from './tables/index.js';

/**
 * Brings the database to this build's schema ({@link migrateDatabase} with
 * every known migration, checked against the committed schema snapshot)
 * and logs `schema ready`. Shared by the service's
 * start-up and the migrate-only entry, so both fail the same way:
 * a {@link SchemaRefusal} passes through unchanged (its message is written
 * for operators); any other failure is logged by error name and SQLSTATE
 * only, because pg's messages can name hosts, users and SQL, and becomes
 * `the database is unavailable`. The caller still owns `db` and closes it.
 */
export async function prepareSchema(db: Kysely<Database>, logger: Logger): Promise<MigrationReport> {
  try {
    const report = await migrateDatabase(db, MIGRATIONS, SCHEMA_SNAPSHOT);
    logger.info('schema ready', { schema_version: report.current, applied: report.applied });
    return report;
  } catch (error) {
    if (error instanceof SchemaRefusal) throw error;
    logger.error('cannot reach or migrate the database', { error: (error as Error).name, code: (error as { code?: string }).code });
    throw new Error('the database is unavailable');
  }
}

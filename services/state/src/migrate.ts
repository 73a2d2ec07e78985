import { createLogger, requireEnv } from '@docket/service-kit';
import { openDatabase } from './db/database.js';
import { prepareSchema } from './db/prepare-schema.js';

/**
 * `node services/state/dist/migrate.js`: applies the state schema's pending
 * migrations to DOCKET_DATABASE_URL and exits 0, or logs one
 * `migration failed` line (error name and reason: a missing variable, a
 * SchemaRefusal, or `the database is unavailable`; never SQL or connection
 * details) and exits 1. The same migrations, advisory lock and refusals as
 * the service's start-up ({@link prepareSchema}), for a Kubernetes Job that
 * runs once before a rollout. Never starts embedded Postgres: it is for
 * deployments, which always name their database.
 */
const logger = createLogger('state');
try {
  const { db } = openDatabase({ connectionString: requireEnv(process.env, 'DOCKET_DATABASE_URL'), maxConnections: 1, logger });
  try {
    await prepareSchema(db, logger);
  } finally {
    await db.destroy();
  }
} catch (error) {
  logger.error('migration failed', error instanceof Error ? { error: error.name, reason: error.message } : { error: typeof error });
  process.exitCode = 1;
}

import { createLogger, runUntilSignalled } from '@docket/service-kit';
import { readStateConfig } from './config.js';
import { openDatabase } from './db/database.js';
import { MIGRATIONS } from './db/migrations/index.js';
import { SchemaRefusal, migrateDatabase } from './db/migrator.js';
import { resolveDatabaseUrl } from './db/embedded-database.js';
import { startStateServer } from './server.js';

const logger = createLogger('state');

async function main(): Promise<void> {
  const config = readStateConfig(process.env);
  const database = await resolveDatabaseUrl(config, logger);
  const { db } = openDatabase({ connectionString: database.url, maxConnections: config.maxConnections });
  try {
    const report = await migrateDatabase(db, MIGRATIONS);
    logger.info('schema ready', { schema_version: report.current, applied: report.applied });
  } catch (error) {
    await db.destroy();
    await database.stop();
    if (error instanceof SchemaRefusal) {
      logger.error('refusing to start', { reason: error.message });
    } else {
      logger.error('cannot reach or migrate the database', { error: (error as Error).name, code: (error as { code?: string }).code });
    }
    process.exit(1);
  }
  const server = await startStateServer(config, db, logger);
  runUntilSignalled(server, logger, config.shutdownGraceMs, async () => {
    await db.destroy();
    await database.stop();
  });
}

main().catch((error: unknown) => {
  logger.error('failed to start', { error: (error as Error).name, reason: (error as Error).message });
  process.exit(1);
});

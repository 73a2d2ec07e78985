import type { Environment, Logger, StartedService } from '@docket/service-kit';
import { readStateConfig } from './config.js';
import { ChangeListenerHub } from './db/change-listener.js';
import { ApprovalHistory } from './db/approval-history.js';
import { openDatabase } from './db/database.js';
import { resolveDatabaseUrl } from './db/embedded-database.js';
import { SchemaRefusal } from './db/migrator.js';
import { prepareSchema } from './db/prepare-schema.js';
import { startStateServer } from './server.js';
import { RollbackGuard } from './failover/rollback-guard.js';

/**
 * Starts the state service from its environment: the rollback guard (and
 * its watermark file), the database (embedded Postgres unless
 * DOCKET_DATABASE_URL names one), the schema, the approval history, the
 * change listener, then the server, after which the guard refuses calls
 * if it finds acknowledged writes lost. `main.ts` runs it as a
 * process; the in-process test cluster calls it directly.
 */
export async function startStateService(env: Environment, logger: Logger): Promise<StartedService> {
  const config = readStateConfig(env);
  // Before the first connection: each one is checked against what this replica acknowledged before (its watermark file).
  const rollbackGuard = await RollbackGuard.open(config.watermarkFile, logger);
  const database = await resolveDatabaseUrl(config, logger);
  const { db, pool } = openDatabase({ connectionString: database.url, maxConnections: config.maxConnections, pooling: config.pooling, guard: rollbackGuard, logger });
  // The migrations hold a session lock: through a transaction pooler they run on the direct connection.
  const direct = config.directDatabaseUrl ?? database.url;
  const migrating = direct === database.url ? db : openDatabase({ connectionString: direct, maxConnections: 1, logger }).db;
  try {
    await prepareSchema(migrating, logger);
  } catch (error) {
    await db.destroy();
    await database.stop();
    throw error;
  } finally {
    if (migrating !== db) await migrating.destroy();
  }
  let approvals: ApprovalHistory;
  try {
    approvals = await ApprovalHistory.open(config.approvalDatabaseUrl ?? database.url, logger, config.approvalDatabaseUrl ? 'session' : config.pooling);
  } catch (error) {
    await db.destroy();
    await database.stop();
    if (error instanceof SchemaRefusal) throw error;
    logger.error('cannot reach or prepare the approval history', { error: (error as Error).name, code: (error as { code?: string }).code });
    throw new Error('the approval history is unavailable');
  }
  const changes = new ChangeListenerHub(direct, logger);
  await changes.start();
  const server = await startStateServer(config, { db, pool }, changes, approvals, rollbackGuard, logger);
  rollbackGuard.arm();
  return {
    server,
    graceMs: config.shutdownGraceMs,
    onStopped: async () => {
      await rollbackGuard.close();
      await changes.stop();
      await approvals.close();
      await db.destroy();
      await database.stop();
    },
  };
}

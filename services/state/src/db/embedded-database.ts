import { join } from 'node:path';
import { startEmbeddedPostgres } from '@docket/embedded-postgres';
import type { Logger } from '@docket/service-kit';
import type { StateConfig } from '../config.js';

/** The database the state service uses, and how to let go of it. */
export interface ResolvedDatabase {
  readonly url: string;
  readonly stop: () => Promise<void>;
}

/**
 * DOCKET_DATABASE_URL when set; otherwise a persistent embedded Postgres
 * under `<DOCKET_DATA_DIR>/postgres`, owned and stopped by this process.
 */
export async function resolveDatabaseUrl(config: StateConfig, logger: Logger): Promise<ResolvedDatabase> {
  if (config.databaseUrl) return { url: config.databaseUrl, stop: async () => {} };
  const embedded = await startEmbeddedPostgres({ dataDir: join(config.dataDir, 'postgres'), persistent: true });
  logger.info('embedded postgres started', { port: embedded.port });
  const url = await embedded.createDatabase('docket');
  return { url, stop: () => embedded.stop() };
}

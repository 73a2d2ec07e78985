import { join } from 'node:path';
import type { Logger } from '@docket/service-kit';
import type { StateConfig } from '../config.js';

/** The database the state service uses, and how to let go of it. */
export interface ResolvedDatabase {
  readonly url: string;
  readonly stop: () => Promise<void>;
}

/** Loads `@docket/embedded-postgres`; injectable so tests can stand in for an image without it. */
export type EmbeddedPostgresImporter = () => Promise<typeof import('@docket/embedded-postgres')>;

const importEmbeddedPostgres: EmbeddedPostgresImporter = () => import('@docket/embedded-postgres');

/**
 * DOCKET_DATABASE_URL when set; otherwise a persistent embedded Postgres
 * under `<DOCKET_DATA_DIR>/postgres`, owned and stopped by this process.
 *
 * `@docket/embedded-postgres` is imported only on that second path, so the
 * production image, which leaves the package and its PostgreSQL binaries
 * out, runs whenever a URL is given. Without both, start-up fails with an
 * error that says DOCKET_DATABASE_URL is required (never the module path
 * the loader tried).
 */
export async function resolveDatabaseUrl(
  config: StateConfig,
  logger: Logger,
  importer: EmbeddedPostgresImporter = importEmbeddedPostgres,
): Promise<ResolvedDatabase> {
  if (config.databaseUrl) return { url: config.databaseUrl, stop: async () => {} };
  const { startEmbeddedPostgres } = await loadEmbeddedPostgres(importer);
  const embedded = await startEmbeddedPostgres({ dataDir: join(config.dataDir, 'postgres'), persistent: true });
  logger.info('embedded postgres started', { port: embedded.port });
  const url = await embedded.createDatabase('docket');
  return { url, stop: () => embedded.stop() };
}

async function loadEmbeddedPostgres(importer: EmbeddedPostgresImporter): ReturnType<EmbeddedPostgresImporter> {
  try {
    return await importer();
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND') {
      throw new Error('DOCKET_DATABASE_URL is required: this installation has no embedded PostgreSQL');
    }
    throw new Error('embedded PostgreSQL could not be loaded; set DOCKET_DATABASE_URL to use an external database');
  }
}

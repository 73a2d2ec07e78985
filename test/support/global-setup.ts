import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '@docket/embedded-postgres';
import { prepareMigratedTemplate } from './migrated-template.js';
import type {} from './provided-context.js';

/**
 * vitest global setup: one real Postgres for the whole run, shared by every
 * test file through `inject('pgAdminUrl')`; files isolate themselves with
 * their own databases (see `createTestDatabase`), empty or copied from a
 * template migrated once here (`createMigratedTestDatabase`).
 *
 * The server is embedded, non-persistent (its temp directory is deleted on
 * teardown; `fsync` is off) and generously sized for parallel test files.
 * Set `DOCKET_TEST_DATABASE_URL` to a superuser URL to use an existing
 * server instead (a CI service container, say).
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | void> {
  const external = process.env['DOCKET_TEST_DATABASE_URL'];
  if (external) {
    project.provide('migratedTemplate', await prepareMigratedTemplate(external));
    project.provide('pgAdminUrl', external);
    return;
  }
  const server = await startEmbeddedPostgres({
    dataDir: await mkdtemp(join(tmpdir(), 'docket-test-pg-')),
    persistent: false,
    settings: { max_connections: '500' },
  });
  try {
    project.provide('migratedTemplate', await prepareMigratedTemplate(server.adminUrl));
  } catch (error) {
    await server.stop();
    throw error;
  }
  project.provide('pgAdminUrl', server.adminUrl);
  return () => server.stop();
}

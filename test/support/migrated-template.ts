import { randomBytes } from 'node:crypto';
import { createDatabase } from '@docket/embedded-postgres';
import { createLogger } from '@docket/service-kit';
import { startStateService } from '@docket/state-service/start';

/** The database every migrated test database is copied from. */
const MIGRATED_TEMPLATE = 'docket_migrated_template';

/**
 * Creates the template database on the server behind `adminUrl` and brings
 * it to this build's schema by starting a state service on it and stopping
 * it (the migrations checked against the schema snapshot, then the approval
 * history, exactly as any start-up does); once stopped, nothing is
 * connected to it, so it can be copied. Returns its name. Run once per test
 * run by the global setup: a test database made from it
 * (`createMigratedTestDatabase`) is ready in milliseconds instead of
 * replaying every migration, and a state service started on it finds
 * nothing to apply.
 */
export async function prepareMigratedTemplate(adminUrl: string): Promise<string> {
  const url = await createDatabase(adminUrl, MIGRATED_TEMPLATE);
  const env = {
    DOCKET_DATABASE_URL: url,
    DOCKET_LISTEN: '127.0.0.1:0',
    DOCKET_SERVICE_AUTH_SECRET: randomBytes(32).toString('base64url'),
  };
  const state = await startStateService(env, createLogger('state', () => {}));
  await state.server.shutdown(0);
  await state.onStopped?.();
  return MIGRATED_TEMPLATE;
}

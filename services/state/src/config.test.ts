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

describe('readStateConfig: the acknowledged watermark file', () => {
  it('lives in the data dir beside the embedded database, nowhere by default with an external one, wherever DOCKET_STATE_WATERMARK_FILE says', () => {
    expect(readStateConfig({ ...REQUIRED, DOCKET_DATA_DIR: '/var/lib/docket' }).watermarkFile).toBe('/var/lib/docket/state-watermark.json');
    expect(readStateConfig({ ...REQUIRED, DOCKET_DATABASE_URL: 'postgres://docket@db/docket' }).watermarkFile).toBeUndefined();
    expect(readStateConfig({ ...REQUIRED, DOCKET_DATABASE_URL: 'postgres://docket@db/docket', DOCKET_STATE_WATERMARK_FILE: '/srv/state-1.json' }).watermarkFile).toBe('/srv/state-1.json');
  });
});

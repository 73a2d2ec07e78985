import { describe, expect, it } from 'vitest';
import { readExecutionConfig } from './config.js';

const REQUIRED = { DOCKET_AUTH_SECRET: 'public-secret-0123456789-abcdefghijklm', DOCKET_SERVICE_AUTH_SECRET: 'service-secret-0123456789-nopqrstuvwxyz' };

describe('readExecutionConfig', () => {
  it('applies the documented defaults', () => {
    expect(readExecutionConfig(REQUIRED)).toMatchObject({
      listen: { host: '127.0.0.1', port: 7402 },
      backgroundLoops: true,
      reaperIntervalMs: 1000,
      retryIntervalMs: 1000,
      sweepIntervalMs: 60_000,
      maintenanceBatch: 100,
      claimRecheckMs: 5000,
      workSessionMaxAgeMs: 600_000,
      feedRetentionMs: 8 * 86_400_000,
    });
  });

  it('reads every setting from the environment', () => {
    const config = readExecutionConfig({
      ...REQUIRED,
      DOCKET_BACKGROUND_LOOPS: 'off',
      DOCKET_REAPER_INTERVAL_MS: '50',
      DOCKET_RETRY_INTERVAL_MS: '75',
      DOCKET_SWEEP_INTERVAL_MS: '5000',
      DOCKET_MAINTENANCE_BATCH: '1000',
      DOCKET_CLAIM_RECHECK_MS: '250',
      DOCKET_WORK_SESSION_MAX_AGE_MS: '1500',
      DOCKET_FEED_CURSOR_TTL_SECONDS: '3600',
    });
    expect(config).toMatchObject({
      backgroundLoops: false,
      reaperIntervalMs: 50,
      retryIntervalMs: 75,
      sweepIntervalMs: 5000,
      maintenanceBatch: 1000,
      claimRecheckMs: 250,
      workSessionMaxAgeMs: 1500,
      feedRetentionMs: 3_600_000 + 86_400_000,
    });
  });

  it('refuses values it cannot honour, naming the variable', () => {
    expect(() => readExecutionConfig({ ...REQUIRED, DOCKET_MAINTENANCE_BATCH: '1001' })).toThrow(/DOCKET_MAINTENANCE_BATCH/);
    expect(() => readExecutionConfig({ ...REQUIRED, DOCKET_REAPER_INTERVAL_MS: '0' })).toThrow(/DOCKET_REAPER_INTERVAL_MS/);
    expect(() => readExecutionConfig({ ...REQUIRED, DOCKET_BACKGROUND_LOOPS: 'maybe' })).toThrow(/DOCKET_BACKGROUND_LOOPS/);
    expect(() => readExecutionConfig({ ...REQUIRED, DOCKET_WORK_SESSION_MAX_AGE_MS: '0' })).toThrow(/DOCKET_WORK_SESSION_MAX_AGE_MS/);
  });
});

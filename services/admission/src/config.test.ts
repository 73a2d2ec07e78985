import { describe, expect, it } from 'vitest';
import { readAdmissionConfig } from './config.js';

const REQUIRED = {
  DOCKET_AUTH_SECRET: 'public-secret-0123456789-abcdefghijklm',
  DOCKET_SERVICE_AUTH_SECRET: 'service-secret-0123456789-nopqrstuvwxyz',
  DOCKET_CURSOR_SECRET: 'cursor-secret-0123456789-abcdefghijklmn',
};

describe('readAdmissionConfig', () => {
  it('applies the documented defaults', () => {
    expect(readAdmissionConfig(REQUIRED)).toMatchObject({
      listen: { host: '127.0.0.1', port: 7401 },
      idempotencyTtlMs: 86_400_000,
      pageTokenTtlMs: 86_400_000,
      feedCursorTtlMs: 7 * 86_400_000,
    });
  });

  it('gives the change-feed cursors it hands out the lifetime the events service and the feed pruning use', () => {
    const config = readAdmissionConfig({ ...REQUIRED, DOCKET_FEED_CURSOR_TTL_SECONDS: '3600', DOCKET_PAGE_TOKEN_TTL_SECONDS: '600' });
    expect(config.feedCursorTtlMs).toBe(3_600_000);
    expect(config.pageTokenTtlMs).toBe(600_000);
  });

  it('refuses an idempotency lifetime under a day', () => {
    expect(() => readAdmissionConfig({ ...REQUIRED, DOCKET_IDEMPOTENCY_TTL_SECONDS: '3600' })).toThrow('DOCKET_IDEMPOTENCY_TTL_SECONDS must be at least 86400');
  });
});

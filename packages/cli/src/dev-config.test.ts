import { describe, expect, it } from 'vitest';
import { devPostgresPort, devServicePorts, inheritedServiceEnv } from './dev-config.js';

describe('devServicePorts', () => {
  it('uses the SPEC defaults', () => {
    expect(devServicePorts({})).toEqual({ admission: 7401, execution: 7402, events: 7403, state: 7404 });
  });

  it('takes DOCKET_<NAME>_PORT overrides, 0 included', () => {
    expect(devServicePorts({ DOCKET_STATE_PORT: '9000', DOCKET_EVENTS_PORT: '0' })).toEqual({
      admission: 7401,
      execution: 7402,
      events: 0,
      state: 9000,
    });
  });

  it('rejects values that are not ports', () => {
    expect(() => devServicePorts({ DOCKET_ADMISSION_PORT: 'http' })).toThrow(/DOCKET_ADMISSION_PORT must be a port/);
    expect(() => devServicePorts({ DOCKET_ADMISSION_PORT: '70000' })).toThrow(/must be a port/);
    expect(() => devServicePorts({ DOCKET_ADMISSION_PORT: '-1' })).toThrow(/must be a port/);
  });
});

describe('devPostgresPort', () => {
  it('is undefined (pick a free port) unless set to a non-zero port', () => {
    expect(devPostgresPort({})).toBeUndefined();
    expect(devPostgresPort({ DOCKET_POSTGRES_PORT: '0' })).toBeUndefined();
    expect(devPostgresPort({ DOCKET_POSTGRES_PORT: '5433' })).toBe(5433);
  });
});

describe('inheritedServiceEnv', () => {
  it('drops the per-service variables and keeps everything else', () => {
    expect(
      inheritedServiceEnv({
        PATH: '/bin',
        NODE_OPTIONS: '--enable-source-maps',
        DOCKET_DATABASE_URL: 'postgres://x',
        DOCKET_LISTEN: '0.0.0.0:1',
        DOCKET_AUTH_SECRET: 's',
        DOCKET_LOG_LEVEL: 'debug',
      }),
    ).toEqual({ PATH: '/bin', NODE_OPTIONS: '--enable-source-maps', DOCKET_LOG_LEVEL: 'debug' });
  });
});

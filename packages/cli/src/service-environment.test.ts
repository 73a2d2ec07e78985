import { describe, expect, it } from 'vitest';
import { serviceEnvironment, type DocketServiceSettings } from './service-environment.js';

const settings: DocketServiceSettings = {
  authSecret: 'auth',
  cursorSecret: 'cursor',
  serviceToken: 'token',
  databaseUrl: 'postgres://db',
};

describe('serviceEnvironment', () => {
  it('gives the database only to state', () => {
    expect(serviceEnvironment('state', settings, '127.0.0.1:7404')).toEqual({
      DOCKET_LISTEN: '127.0.0.1:7404',
      DOCKET_AUTH_SECRET: 'auth',
      DOCKET_CURSOR_SECRET: 'cursor',
      DOCKET_DATABASE_URL: 'postgres://db',
    });
  });

  it('gives the other services the state URL and the service token', () => {
    expect(serviceEnvironment('events', settings, '127.0.0.1:0', 'http://127.0.0.1:7404')).toEqual({
      DOCKET_LISTEN: '127.0.0.1:0',
      DOCKET_AUTH_SECRET: 'auth',
      DOCKET_CURSOR_SECRET: 'cursor',
      DOCKET_STATE_URL: 'http://127.0.0.1:7404',
      DOCKET_SERVICE_TOKEN: 'token',
    });
  });

  it('refuses to configure a front service without the state URL', () => {
    expect(() => serviceEnvironment('admission', settings, '127.0.0.1:0')).toThrow(/needs the state service's URL/);
  });
});

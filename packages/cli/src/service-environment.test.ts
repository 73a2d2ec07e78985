import { describe, expect, it } from 'vitest';
import { serviceEnvironment, type DocketServiceSettings } from './service-environment.js';

const settings: DocketServiceSettings = {
  authSecret: 'auth',
  cursorSecret: 'cursor',
  serviceAuthSecret: 'service',
  databaseUrl: 'postgres://db',
};

describe('serviceEnvironment', () => {
  it('gives state the database and its own service secret, and not the public token secret', () => {
    expect(serviceEnvironment('state', settings, '127.0.0.1:7404')).toEqual({
      DOCKET_LISTEN: '127.0.0.1:7404',
      DOCKET_SERVICE_AUTH_SECRET: 'service',
      DOCKET_DATABASE_URL: 'postgres://db',
    });
  });

  it('gives the other services the state URL, the public secrets and the service secret they sign their state calls with', () => {
    expect(serviceEnvironment('events', settings, '127.0.0.1:0', 'http://127.0.0.1:7404')).toEqual({
      DOCKET_LISTEN: '127.0.0.1:0',
      DOCKET_AUTH_SECRET: 'auth',
      DOCKET_CURSOR_SECRET: 'cursor',
      DOCKET_SERVICE_AUTH_SECRET: 'service',
      DOCKET_STATE_URL: 'http://127.0.0.1:7404',
    });
  });

  it('refuses to configure a front service without the state URL', () => {
    expect(() => serviceEnvironment('admission', settings, '127.0.0.1:0')).toThrow(/needs the state service's URL/);
  });
});

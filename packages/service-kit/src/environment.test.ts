import { describe, expect, it } from 'vitest';
import { readListenAddress, readLogLevel, readSecondsAsMs, requireEnv } from './environment.js';

describe('readListenAddress', () => {
  it('defaults to 127.0.0.1 and the default port', () => {
    expect(readListenAddress({}, 7401)).toEqual({ host: '127.0.0.1', port: 7401 });
    expect(readListenAddress({ DOCKET_LISTEN: '' }, 7401)).toEqual({ host: '127.0.0.1', port: 7401 });
  });

  it('reads host:port, [ipv6]:port and :port', () => {
    expect(readListenAddress({ DOCKET_LISTEN: '0.0.0.0:8080' }, 7401)).toEqual({ host: '0.0.0.0', port: 8080 });
    expect(readListenAddress({ DOCKET_LISTEN: 'state.internal:0' }, 7401)).toEqual({ host: 'state.internal', port: 0 });
    expect(readListenAddress({ DOCKET_LISTEN: '[::1]:7402' }, 7401)).toEqual({ host: '::1', port: 7402 });
    expect(readListenAddress({ DOCKET_LISTEN: ':7403' }, 7401)).toEqual({ host: '127.0.0.1', port: 7403 });
  });

  it('rejects garbage with a message naming the variable and the expected form', () => {
    for (const garbage of ['7401', 'localhost', 'host:port', 'host:70000', 'a b:1', '::1:7401', 'http://x:1']) {
      expect(() => readListenAddress({ DOCKET_LISTEN: garbage }, 7401), garbage).toThrow(
        /^DOCKET_LISTEN must be host:port/,
      );
    }
  });
});

describe('requireEnv', () => {
  it('returns a set value and names a missing one', () => {
    expect(requireEnv({ DOCKET_AUTH_SECRET: 's' }, 'DOCKET_AUTH_SECRET')).toBe('s');
    expect(() => requireEnv({}, 'DOCKET_AUTH_SECRET')).toThrow('DOCKET_AUTH_SECRET');
    expect(() => requireEnv({ DOCKET_AUTH_SECRET: '' }, 'DOCKET_AUTH_SECRET')).toThrow('DOCKET_AUTH_SECRET');
  });
});

describe('readLogLevel', () => {
  it.each([
    [undefined, 'info'],
    ['', 'info'],
    ['debug', 'debug'],
    ['info', 'info'],
    ['warn', 'warn'],
    ['error', 'error'],
  ])('reads DOCKET_LOG_LEVEL=%s as %s', (value, level) => {
    expect(readLogLevel({ DOCKET_LOG_LEVEL: value })).toBe(level);
  });

  it('names the variable and the levels for anything else', () => {
    for (const garbage of ['INFO', 'trace', 'verbose', ' info']) {
      expect(() => readLogLevel({ DOCKET_LOG_LEVEL: garbage }), garbage).toThrow(
        'DOCKET_LOG_LEVEL must be one of debug, info, warn, error',
      );
    }
  });
});

describe('readSecondsAsMs', () => {
  it('reads whole seconds as milliseconds, the fallback when unset or empty', () => {
    expect(readSecondsAsMs({}, 'DOCKET_X_SECONDS', 60)).toBe(60_000);
    expect(readSecondsAsMs({ DOCKET_X_SECONDS: '' }, 'DOCKET_X_SECONDS', 60)).toBe(60_000);
    expect(readSecondsAsMs({ DOCKET_X_SECONDS: '90' }, 'DOCKET_X_SECONDS', 60)).toBe(90_000);
  });

  it('refuses anything but a positive whole number, naming the variable', () => {
    for (const value of ['0', '-1', '1.5', '10s']) {
      expect(() => readSecondsAsMs({ DOCKET_X_SECONDS: value }, 'DOCKET_X_SECONDS', 60), value).toThrow(/^DOCKET_X_SECONDS must be a positive whole number/);
    }
  });
});

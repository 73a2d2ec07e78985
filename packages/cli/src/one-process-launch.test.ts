import { describe, expect, it } from 'vitest';
import { oneProcessEnvironment, parseAllListening } from './one-process-launch.js';

const SETTINGS = { authSecret: 'a', cursorSecret: 'c', serviceAuthSecret: 's', databaseUrl: 'postgres://db/docket' };

describe('launching the one process', () => {
  it('gives it every service’s settings and where each listens, and no state URL', () => {
    const env = oneProcessEnvironment(SETTINGS, (name) => `127.0.0.1:${{ admission: 1, execution: 2, events: 3, state: 4 }[name]}`);
    expect(env).toEqual({
      DOCKET_AUTH_SECRET: 'a',
      DOCKET_CURSOR_SECRET: 'c',
      DOCKET_SERVICE_AUTH_SECRET: 's',
      DOCKET_DATABASE_URL: 'postgres://db/docket',
      DOCKET_ADMISSION_LISTEN: '127.0.0.1:1',
      DOCKET_EXECUTION_LISTEN: '127.0.0.1:2',
      DOCKET_EVENTS_LISTEN: '127.0.0.1:3',
      DOCKET_STATE_LISTEN: '127.0.0.1:4',
    });
  });

  it('reads the URLs of its "all listening" line only', () => {
    expect(parseAllListening('{"service":"docket","msg":"all listening","urls":{"state":"http://127.0.0.1:4","admission":"http://127.0.0.1:1","other":"x"}}')).toEqual({
      state: 'http://127.0.0.1:4',
      admission: 'http://127.0.0.1:1',
    });
    expect(parseAllListening('{"service":"state","msg":"listening","url":"http://127.0.0.1:4"}')).toBeUndefined();
    expect(parseAllListening('all listening')).toBeUndefined();
  });
});

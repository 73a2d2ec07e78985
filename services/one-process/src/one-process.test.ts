import { describe, expect, it } from 'vitest';
import { listenVariableOf, servicesOf } from './one-process.js';

describe('the one process', () => {
  it('starts all four services unless DOCKET_ONE_PROCESS_SERVICES names some, state always first', () => {
    expect(servicesOf({})).toEqual(['state', 'admission', 'execution', 'events']);
    expect(servicesOf({ DOCKET_ONE_PROCESS_SERVICES: 'execution, state,admission' })).toEqual(['state', 'admission', 'execution']);
  });

  it('refuses a list without state, or with a name it does not know', () => {
    expect(() => servicesOf({ DOCKET_ONE_PROCESS_SERVICES: 'admission' })).toThrow('must include state');
    expect(() => servicesOf({ DOCKET_ONE_PROCESS_SERVICES: 'state,billing' })).toThrow('unknown services (billing)');
  });

  it('reads where each service listens from a variable of its own', () => {
    expect(listenVariableOf('admission')).toBe('DOCKET_ADMISSION_LISTEN');
  });
});

import { describe, expect, it } from 'vitest';
import { MAX_DEV_REPLICAS, parseReplicaCounts } from './replica-counts.js';

describe('parseReplicaCounts', () => {
  it('reads every service and defaults the rest to one', () => {
    expect(parseReplicaCounts('admission=3,execution=3,events=2,state=2')).toEqual({ admission: 3, execution: 3, events: 2, state: 2 });
    expect(parseReplicaCounts(' execution = 4 ')).toEqual({ admission: 1, execution: 4, events: 1, state: 1 });
  });

  it.each([
    ['an unknown service', 'workers=2', /<service>=<count>/],
    ['a missing count', 'admission', /<service>=<count>/],
    ['an empty pair', 'admission=2,', /<service>=<count>/],
    ['a negative count', 'admission=-1', /<service>=<count>/],
    ['zero', 'state=0', /state must run 1 to 16 replicas, got 0/],
    ['too many', `events=${MAX_DEV_REPLICAS + 1}`, /events must run 1 to 16/],
    ['a repeated service', 'state=2,state=3', /names state twice/],
  ])('refuses %s', (_what, spec, message) => {
    expect(() => parseReplicaCounts(spec)).toThrow(message);
  });
});

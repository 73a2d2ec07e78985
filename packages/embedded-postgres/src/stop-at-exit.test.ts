import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

/** Where stop-at-exit.ts keeps the process's stops; swapped out here so the test owns the listener it makes. */
const STOPS = Symbol.for('@docket/embedded-postgres/stop-at-exit');
const holder = process as unknown as Record<symbol, unknown>;

describe('stopAtExit', () => {
  let saved: unknown;
  let baseline: Function[];

  beforeEach(() => {
    saved = holder[STOPS];
    delete holder[STOPS];
    baseline = process.listeners('exit');
  });

  afterEach(() => {
    for (const listener of process.listeners('exit')) {
      if (!baseline.includes(listener)) process.removeListener('exit', listener as () => void);
    }
    if (saved === undefined) delete holder[STOPS];
    else holder[STOPS] = saved;
  });

  it('adds one exit listener for every stop of every copy of the module, and it runs the stops not withdrawn', async () => {
    const ran: number[] = [];
    const withdrawals: (() => void)[] = [];
    for (let copy = 0; copy < 12; copy++) {
      // Evaluated again each time, as vitest does for each isolated test file.
      vi.resetModules();
      const { stopAtExit } = await import('./stop-at-exit.js');
      withdrawals.push(stopAtExit(() => ran.push(copy)));
    }
    const added = process.listeners('exit').filter((listener) => !baseline.includes(listener));
    expect(added).toHaveLength(1);

    withdrawals[3]!();
    withdrawals[3]!();
    (added[0] as () => void)();
    expect(ran).toEqual([0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11]);
  });

  it('runs a function registered twice twice, and withdraws each registration alone', async () => {
    const { stopAtExit } = await import('./stop-at-exit.js');
    let runs = 0;
    const stop = (): void => {
      runs += 1;
    };
    const withdrawFirst = stopAtExit(stop);
    stopAtExit(stop);
    withdrawFirst();
    const added = process.listeners('exit').filter((listener) => !baseline.includes(listener));
    (added[0] as () => void)();
    expect(runs).toBe(1);
  });
});

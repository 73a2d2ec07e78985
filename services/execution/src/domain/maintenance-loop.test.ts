import { create } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  MaintenanceTask,
  RunMaintenanceResponseSchema,
  type RunMaintenanceRequest,
  type RunMaintenanceResponse,
} from '@docket/proto/docket/state/v1/state_service_pb.js';
import { createLogger } from '@docket/service-kit';
import { runMaintenanceLoop } from './maintenance-loop.js';
import type { StateClient } from './worker-call.js';

/** A state service whose RunMaintenance answers come from `answer(callIndex)`. */
function maintenanceState(answer: (index: number) => RunMaintenanceResponse | Error) {
  const calls: { request: RunMaintenanceRequest; at: number }[] = [];
  const started = performance.now();
  const state = {
    runMaintenance(request: RunMaintenanceRequest) {
      calls.push({ request, at: performance.now() - started });
      const result = answer(calls.length - 1);
      return result instanceof Error ? Promise.reject(result) : Promise.resolve(result);
    },
  } as unknown as StateClient;
  return { state, calls };
}

function logLines() {
  const lines: { level: string; msg: string; task?: string }[] = [];
  return { lines, logger: createLogger('execution-test', (line) => lines.push(JSON.parse(line) as never)) };
}

const handled = (count: number, nextDueInMs?: number) =>
  create(RunMaintenanceResponseSchema, {
    handled: count,
    nextDueAt: nextDueInMs === undefined ? undefined : timestampFromMs(Date.now() + nextDueInMs),
  });

// The loop's clock is faked (its pauses, Date.now and performance.now), so
// every pause is checked to the millisecond however busy the machine is.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Lets `ms` of fake time pass, running every pause that ends in it. */
const sleep = (ms: number) => vi.advanceTimersByTimeAsync(ms);

describe('runMaintenanceLoop', () => {
  it('repeats a step at once while it handles full batches, then pauses for the interval', async () => {
    const { state, calls } = maintenanceState((i) => handled(i < 3 ? 10 : 4));
    const stop = new AbortController();
    const loop = runMaintenanceLoop(state, { task: MaintenanceTask.SETTLE_EXPIRED_ATTEMPTS, intervalMs: 300, batch: 10 }, logLines().logger, stop.signal);
    await sleep(0);
    expect(calls.map((call) => call.request.limit)).toEqual([10, 10, 10, 10]);
    expect(calls.every((call) => call.request.task === MaintenanceTask.SETTLE_EXPIRED_ATTEMPTS)).toBe(true);
    await sleep(299);
    expect(calls).toHaveLength(4);
    await sleep(1);
    expect(calls.map((call) => call.at)).toEqual([0, 0, 0, 0, 300]);
    stop.abort();
    await loop;
  });

  it('sleeps only until the next item the state service says is due', async () => {
    const { state, calls } = maintenanceState((i) => (i === 0 ? handled(0, 120) : handled(0)));
    const stop = new AbortController();
    const loop = runMaintenanceLoop(state, { task: MaintenanceTask.REQUEUE_DUE_RETRIES, intervalMs: 10_000, batch: 5 }, logLines().logger, stop.signal);
    await sleep(1_000);
    stop.abort();
    await loop;
    expect(calls.map((call) => call.at)).toEqual([0, 120]);
  });

  it('survives a state service that is down: warns once, backs off, and carries on when it is back', async () => {
    const down = new ConnectError('connection refused', Code.Unavailable);
    const { state, calls } = maintenanceState((i) => (i < 2 ? down : handled(0)));
    const { lines, logger } = logLines();
    const stop = new AbortController();
    const loop = runMaintenanceLoop(state, { task: MaintenanceTask.SWEEP_IDEMPOTENCY_RECORDS, intervalMs: 60_000, batch: 5 }, logger, stop.signal);
    await sleep(10_000);
    stop.abort();
    await loop;
    expect(lines.filter((line) => line.level === 'warn')).toHaveLength(1);
    expect(lines.some((line) => line.msg === 'background loop recovered')).toBe(true);
    // Backoff: 200 ms after the first failure, twice that after the second,
    // then the interval (a minute) once the step succeeds.
    expect(calls.map((call) => call.at)).toEqual([0, 200, 600]);
  });

  it('returns promptly when stopped during a pause', async () => {
    const { state } = maintenanceState(() => handled(0));
    const stop = new AbortController();
    const loop = runMaintenanceLoop(state, { task: MaintenanceTask.SETTLE_EXPIRED_ATTEMPTS, intervalMs: 60_000, batch: 5 }, logLines().logger, stop.signal);
    await sleep(30);
    let returned = false;
    void loop.then(() => (returned = true));
    stop.abort();
    // No time passes: the loop must return without its minute's pause running out.
    await sleep(0);
    expect(returned).toBe(true);
  });
});

import { create } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('runMaintenanceLoop', () => {
  it('repeats a step at once while it handles full batches, then pauses for the interval', async () => {
    const { state, calls } = maintenanceState((i) => handled(i < 3 ? 10 : 4));
    const stop = new AbortController();
    const loop = runMaintenanceLoop(state, { task: MaintenanceTask.SETTLE_EXPIRED_ATTEMPTS, intervalMs: 300, batch: 10 }, logLines().logger, stop.signal);
    await sleep(150);
    expect(calls.map((call) => call.request.limit)).toEqual([10, 10, 10, 10]);
    expect(calls.every((call) => call.request.task === MaintenanceTask.SETTLE_EXPIRED_ATTEMPTS)).toBe(true);
    await sleep(250);
    expect(calls).toHaveLength(5);
    stop.abort();
    await loop;
  });

  it('sleeps only until the next item the state service says is due', async () => {
    const { state, calls } = maintenanceState((i) => (i === 0 ? handled(0, 120) : handled(0)));
    const stop = new AbortController();
    const loop = runMaintenanceLoop(state, { task: MaintenanceTask.REQUEUE_DUE_RETRIES, intervalMs: 10_000, batch: 5 }, logLines().logger, stop.signal);
    await sleep(400);
    stop.abort();
    await loop;
    expect(calls).toHaveLength(2);
    expect(calls[1]!.at).toBeGreaterThanOrEqual(100);
    expect(calls[1]!.at).toBeLessThan(350);
  });

  it('survives a state service that is down: warns once, backs off, and carries on when it is back', async () => {
    const down = new ConnectError('connection refused', Code.Unavailable);
    const { state, calls } = maintenanceState((i) => (i < 2 ? down : handled(0)));
    const { lines, logger } = logLines();
    const stop = new AbortController();
    const loop = runMaintenanceLoop(state, { task: MaintenanceTask.SWEEP_IDEMPOTENCY_RECORDS, intervalMs: 60_000, batch: 5 }, logger, stop.signal);
    await sleep(900);
    stop.abort();
    await loop;
    expect(calls).toHaveLength(3);
    expect(lines.filter((line) => line.level === 'warn')).toHaveLength(1);
    expect(lines.some((line) => line.msg === 'background loop recovered')).toBe(true);
    // Backoff: the second failure waits longer than the first.
    expect(calls[2]!.at - calls[1]!.at).toBeGreaterThan(calls[1]!.at - calls[0]!.at);
  });

  it('returns promptly when stopped during a pause', async () => {
    const { state } = maintenanceState(() => handled(0));
    const stop = new AbortController();
    const loop = runMaintenanceLoop(state, { task: MaintenanceTask.SETTLE_EXPIRED_ATTEMPTS, intervalMs: 60_000, batch: 5 }, logLines().logger, stop.signal);
    await sleep(30);
    const started = performance.now();
    stop.abort();
    await loop;
    expect(performance.now() - started).toBeLessThan(50);
  });
});

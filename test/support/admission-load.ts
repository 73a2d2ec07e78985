import { setTimeout as sleep } from 'node:timers/promises';
import { Code, type Client } from '@connectrpc/connect';
import pg from 'pg';
import { expect } from 'vitest';
import type { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { settle } from './clients.js';
import type { DocketCluster } from './cluster.js';
import { newIdempotencyKey } from './keys.js';

/*
 * Admissions under a fault (issue 11's fault suite): a load of concurrent
 * SubmitJob callers whose every answer is recorded, and the check that the
 * fault lost and invented nothing, comparing every acknowledgement with
 * the database.
 */

/** Concurrent SubmitJob callers in the load generator. */
const CALLERS = 24;
/** The deadline of each call of the load. */
export const CALL_DEADLINE_MS = 8_000;
/** The answers a caller may see while a dependency is away. */
export const TRANSIENT = [Code.Unavailable, Code.DeadlineExceeded];

/** Every SubmitJob the load generator made: acknowledged job ids by key, error codes by key. */
export interface LoadRecord {
  readonly acknowledged: Map<string, string>;
  readonly refused: Map<string, Code>;
}

/**
 * Runs {@link CALLERS} concurrent SubmitJob loops on `queue`, each call with
 * a fresh idempotency key and a deadline, until `stop` resolves; records
 * every answer.
 */
export function generateLoad(admission: Client<typeof AdmissionService>, queue: string): { record: LoadRecord; stop: () => Promise<LoadRecord> } {
  const record: LoadRecord = { acknowledged: new Map(), refused: new Map() };
  let running = true;
  const callers = Array.from({ length: CALLERS }, async () => {
    while (running) {
      const key = newIdempotencyKey('outage');
      const outcome = await settle(admission.submitJob({ idempotencyKey: key, queue, input: {} }, { timeoutMs: CALL_DEADLINE_MS }));
      if (outcome.ok) record.acknowledged.set(key, outcome.value.job!.id);
      else {
        record.refused.set(key, outcome.failure.code);
        // Real time: a refused caller backs off a little, as a client would.
        await sleep(20);
      }
    }
  });
  return {
    record,
    stop: async () => {
      running = false;
      await Promise.all(callers);
      return record;
    },
  };
}

/**
 * Whether a SubmitJob through admission is acknowledged right now (on a
 * queue of its own, outside the load's); throws if a service process has
 * exited, since waiting for recovery would then be pointless.
 */
export async function recovered(cluster: DocketCluster, admission: Client<typeof AdmissionService>): Promise<boolean> {
  const exited = await exitedServices(cluster);
  if (exited.length > 0) throw new Error(`service processes exited: ${exited.join(', ')}`);
  const outcome = await settle(admission.submitJob({ idempotencyKey: newIdempotencyKey('probe'), queue: 'outage-probe', input: {} }, { timeoutMs: 3_000 }));
  return outcome.ok;
}

/** The services of the cluster whose process has exited. */
export async function exitedServices(cluster: DocketCluster): Promise<string[]> {
  const all = Object.values(cluster.replicas).flat();
  // Real time: none; sleep(0) only lets an exit already seen win the race, so a running process answers undefined at once.
  const exited = await Promise.all(all.map((service) => Promise.race([service.exited.then(() => service.name), sleep(0, undefined)])));
  return exited.filter((name): name is NonNullable<typeof name> => name !== undefined);
}

/**
 * What every fault must leave behind: the refusals were transient only,
 * every acknowledged job is stored (read from `databaseUrl` directly) with
 * exactly one job.admitted event, and a retry of every refused key answers
 * OK; afterwards the queue holds exactly one job per key, and nothing else.
 */
export async function expectNothingLostOrInvented(
  admission: Client<typeof AdmissionService>,
  databaseUrl: string,
  queue: string,
  record: LoadRecord,
): Promise<void> {
  expect(record.acknowledged.size).toBeGreaterThan(0);
  const codes = new Set(record.refused.values());
  expect([...codes].filter((code) => !TRANSIENT.includes(code)).map((code) => Code[code])).toEqual([]);

  const retried = new Map<string, string>();
  for (const key of record.refused.keys()) {
    const { job } = await admission.submitJob({ idempotencyKey: key, queue, input: {} }, { timeoutMs: 10_000 });
    retried.set(key, job!.id);
  }
  // A retry of an acknowledged key replays the acknowledged job.
  const [sampleKey, sampleJob] = [...record.acknowledged][0]!;
  expect((await admission.submitJob({ idempotencyKey: sampleKey, queue, input: {} })).job?.id).toBe(sampleJob);

  const sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  try {
    const { rows } = await sql.query<{ id: string; admitted: string }>(
      `select j.id, (select count(*) from job_events e where e.job_id = j.id and e.type = 'job.admitted') as admitted
         from jobs j where j.queue = $1`,
      [queue],
    );
    const stored = new Map(rows.map((row) => [row.id, Number(row.admitted)]));
    const expected = new Set([...record.acknowledged.values(), ...retried.values()]);
    expect(expected.size).toBe(record.acknowledged.size + retried.size); // one job per key, no two keys share one
    const missing = [...record.acknowledged.values()].filter((id) => !stored.has(id));
    expect(missing).toEqual([]);
    expect([...stored.keys()].filter((id) => !expected.has(id))).toEqual([]);
    expect(stored.size).toBe(expected.size);
    expect([...stored.values()].filter((count) => count !== 1)).toEqual([]);
  } finally {
    await sql.end();
  }
}

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '@docket/embedded-postgres';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventService, type StreamJobEventsResponse } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { expectNothingLostOrInvented, exitedServices, generateLoad, recovered, type LoadRecord } from '../support/admission-load.js';
import { clientFor } from '../support/clients.js';
import { startCluster, stopAll, type DocketCluster } from '../support/cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { newIdempotencyKey } from '../support/keys.js';
import { until } from '../support/polling.js';
import { freshQueue } from '../support/raw-worker-harness.js';
import { newOperationId } from '../support/raw-worker.js';
import { StreamReader } from '../support/stream-probe.js';

/*
 * Postgres going away under the state service (issue 11's fault suite):
 * every backend of the state service terminated under load, the LISTEN
 * connection alone terminated, and the whole server stopped in immediate
 * mode and started again. In each case no service process exits, callers
 * see only UNAVAILABLE (or DEADLINE_EXCEEDED, since they set deadlines),
 * never INTERNAL or UNKNOWN, calls succeed again without a restart, every
 * acknowledged admission is in the database with one job.admitted event,
 * and retrying every refused key yields exactly one job per key.
 */

/** The application names the state service's connections carry (pool, approval history, LISTEN). */
const STATE_CONNECTIONS = ['docket-state', 'docket-approval-history', 'docket-state-listener'];
const LISTENER = 'docket-state-listener';
/** A generous bound for a wake-up that takes milliseconds, far below a waiting claim's 45 s. */
const WOKEN_WITHIN_MS = 15_000;

/** The pids of the state service's backends in `database` with one of `names`. */
async function backendPids(admin: pg.Client, database: string, names: readonly string[]): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(
    'select pid from pg_stat_activity where datname = $1 and application_name = any($2) order by pid',
    [database, names],
  );
  return rows.map((row) => row.pid);
}

/** Terminates every backend in `database` with one of `names`; returns how many were terminated. */
async function terminateBackends(admin: pg.Client, database: string, names: readonly string[]): Promise<number> {
  const { rows } = await admin.query<{ terminated: boolean }>(
    `select pg_terminate_backend(pid) as terminated from pg_stat_activity
      where datname = $1 and application_name = any($2) and pid <> pg_backend_pid()`,
    [database, names],
  );
  return rows.filter((row) => row.terminated).length;
}

describe('state backends terminated on the shared Postgres', () => {
  let cluster: DocketCluster;
  let admin: pg.Client;
  let database: string;

  beforeAll(async () => {
    const databaseUrl = await createMigratedTestDatabase('postgres outages');
    database = new URL(databaseUrl).pathname.slice(1);
    cluster = await startCluster({
      databaseUrl,
      // Only a wake from the change stream can end a waiting claim early.
      env: { execution: { DOCKET_CLAIM_RECHECK_MS: '60000' } },
    });
    admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
  });

  afterAll(async () => {
    await admin?.end();
    await stopAll();
  });

  it('every backend terminated repeatedly under load: only UNAVAILABLE meanwhile, then everything works again, nothing lost', async () => {
    const admission = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor('outage-owner', 'user'));
    const queue = freshQueue('terminated');
    const before = await backendPids(admin, database, STATE_CONNECTIONS);
    expect(before.length).toBeGreaterThan(1);

    const load = generateLoad(admission, queue);
    let terminated = 0;
    let record: LoadRecord;
    try {
      await until(async () => load.record.acknowledged.size >= 10, 'the load to be under way');
      // Terminate again and again until calls in flight were hit (most
      // terminations meet idle connections), for at most 40 rounds.
      for (let round = 1; round <= 40 && (round <= 3 || load.record.refused.size === 0); round += 1) {
        terminated += await terminateBackends(admin, database, STATE_CONNECTIONS);
        // Real time: the pace of the terminations, so that the pool reconnects between them and calls are in flight.
        await sleep(100);
      }
      await until(() => recovered(cluster, admission), 'SubmitJob to succeed again after the terminations');
      const atRecovery = load.record.acknowledged.size;
      await until(async () => load.record.acknowledged.size >= atRecovery + 10, 'some load after recovery too');
    } finally {
      record = await load.stop();
    }
    expect(terminated).toBeGreaterThanOrEqual(before.length);
    expect(record.refused.size).toBeGreaterThan(0); // the terminations hit calls in flight
    expect(await exitedServices(cluster)).toEqual([]);
    // New connections replaced the terminated ones, the listener among them.
    const after = await backendPids(admin, database, STATE_CONNECTIONS);
    expect(after.filter((pid) => before.includes(pid))).toEqual([]);
    await until(async () => (await backendPids(admin, database, [LISTENER])).length === 1, 'the listener to reconnect');
    await expectNothingLostOrInvented(admission, cluster.databaseUrl, queue, record);
  });

  it('the LISTEN connection terminated: a waiting ClaimJobs and a StreamJobEvents subscriber are still woken once it reconnects', async () => {
    const owner = await cluster.tokenFor('listen-owner', 'user');
    const admission = clientFor(AdmissionService, cluster.admission.url, owner);
    const events = clientFor(EventService, cluster.events.url, owner);
    const queue = freshQueue('listen');
    const execution = clientFor(ExecutionService, cluster.execution.url, await cluster.tokenFor('listen-worker', 'worker', [queue]));
    const { workerIncarnation } = await execution.registerWorker({ workerName: 'listen-worker', queues: [queue], maxConcurrency: 1 });

    // A subscriber following a job, caught up and waiting for its next event.
    const { job: followed } = await admission.submitJob({ idempotencyKey: newIdempotencyKey('followed'), queue: freshQueue('followed'), input: {} });
    const stream = new StreamReader<StreamJobEventsResponse>(events.streamJobEvents({ jobId: followed!.id })[Symbol.asyncIterator]());
    const isPage = (frame: StreamJobEventsResponse) => frame.frame.case === 'page';
    expect(await stream.next(isPage)).toBeDefined();
    // A claim waiting on an empty queue.
    const claim = execution.claimJobs({ workerIncarnation, maxJobs: 1, wait: durationFromMs(45_000), operationId: newOperationId() });

    const [listener] = await backendPids(admin, database, [LISTENER]);
    expect(listener).toBeDefined();
    const load = generateLoad(admission, freshQueue('listen-load'));
    let record: LoadRecord;
    try {
      expect(await terminateBackends(admin, database, [LISTENER])).toBe(1);
      await until(async () => {
        const now = await backendPids(admin, database, [LISTENER]);
        return now.length === 1 && now[0] !== listener;
      }, 'the listener to reconnect');
    } finally {
      record = await load.stop();
    }
    expect(record.refused.size).toBe(0); // the pool was never touched

    // Both waiters are woken by announcements made after the reconnection.
    const { job } = await admission.submitJob({ idempotencyKey: newIdempotencyKey('wake'), queue, input: {} });
    // Woken, not answered by the last check when its wait runs out (re-checks are a minute apart).
    // Real time: a timeout race, the bound on a wake-up.
    const claimed = await Promise.race([claim, sleep(WOKEN_WITHIN_MS, 'not woken' as const)]);
    expect(claimed === 'not woken' ? claimed : claimed.assignments.map((assignment) => assignment.envelope!.jobId)).toEqual([job!.id]);
    await admission.cancelJob({ idempotencyKey: newIdempotencyKey('cancel'), jobId: followed!.id });
    const page = await stream.next(isPage, WOKEN_WITHIN_MS);
    expect(page?.frame.case === 'page' && page.frame.value.events.map((event) => event.type)).toContain('job.cancelled');
    await stream.cancel();
    expect(await exitedServices(cluster)).toEqual([]);
  });
});

describe('a private Postgres stopped in immediate mode and started again', () => {
  let dataDir: string;
  let server: EmbeddedPostgresHandle;
  let cluster: DocketCluster;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'docket-outage-pg-'));
    // Persistent, so stopping the first server keeps the data directory for the second.
    server = await startEmbeddedPostgres({ dataDir, persistent: true, settings: { fsync: 'off', full_page_writes: 'off' } });
    cluster = await startCluster({ databaseUrl: await server.createDatabase('docket_outage') });
  });

  afterAll(async () => {
    await stopAll();
    await server?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** `pg_ctl stop -m immediate`: SIGQUIT to the postmaster, whose pid heads postmaster.pid. */
  async function stopImmediately(): Promise<void> {
    const pid = Number.parseInt((await readFile(join(server.dataDir, 'pgdata', 'postmaster.pid'), 'utf8')).split('\n')[0]!, 10);
    process.kill(pid, 'SIGQUIT');
    await server.exited;
    await server.stop(); // forgets the dead server; the directory stays
  }

  it('callers get only UNAVAILABLE while it is down, services recover without a restart, and no acknowledged write is lost', async () => {
    const admission = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor('restart-owner', 'user'));
    const queue = freshQueue('restart');
    const load = generateLoad(admission, queue);
    let record: LoadRecord;
    let refusedWhileDown = 0;
    try {
      await until(async () => load.record.acknowledged.size >= 10, 'the load to be under way');
      await stopImmediately();
      // Real time: Postgres stays down a while, so that calls and the services' reconnects meet a dead server, not a blip.
      await sleep(1_500);
      refusedWhileDown = load.record.refused.size;
      server = await startEmbeddedPostgres({ dataDir, port: server.port, persistent: true, settings: { fsync: 'off', full_page_writes: 'off' } });
      await until(() => recovered(cluster, admission), 'SubmitJob to succeed again after the restart', 30_000);
      const atRecovery = load.record.acknowledged.size;
      await until(async () => load.record.acknowledged.size >= atRecovery + 10, 'some load after recovery too');
    } finally {
      record = await load.stop();
    }
    expect(refusedWhileDown).toBeGreaterThan(0);
    expect(await exitedServices(cluster)).toEqual([]);
    await expectNothingLostOrInvented(admission, cluster.databaseUrl, queue, record);
  });
});

import { setTimeout as sleep } from 'node:timers/promises';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { ConnectError, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERNAL_KEEPALIVE } from '@docket/client-kit';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventService, type StreamJobEventsResponse } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import {
  TRANSIENT,
  expectNothingLostOrInvented,
  exitedServices,
  generateLoad,
  recovered,
  type LoadRecord,
} from '../support/admission-load.js';
import { clientFor, settle } from '../support/clients.js';
import { startCluster, stopAll, type DocketCluster } from '../support/cluster.js';
import { createMigratedTestDatabase } from '../support/database.js';
import { newIdempotencyKey } from '../support/keys.js';
import { until } from '../support/polling.js';
import { freshQueue } from '../support/raw-worker-harness.js';
import { newOperationId } from '../support/raw-worker.js';
import { StreamReader } from '../support/stream-probe.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/*
 * Silent network failures (issue 11's fault suite): a TCP proxy the test
 * controls sits between the state service and Postgres, and between the
 * front services and state. A partition cuts every open connection for
 * good (half-open: bytes vanish, nothing answers, no reset arrives, and
 * the proxy's kernel acknowledges every byte and keepalive probe), so
 * only Docket's own checks can notice it:
 * - a statement unanswered past its statement_timeout plus 2 s drops its
 *   connection (`WatchedPgClient`), and the LISTEN connection answers a
 *   heartbeat every 5 s or is replaced (within about 10 s);
 * - an internal HTTP/2 session is pinged every 10 s with calls or streams
 *   open, and checked by a ping before a call after 10 s of silence; an
 *   unanswered ping (5 s) closes it.
 * Meanwhile callers hear only UNAVAILABLE or DEADLINE_EXCEEDED, never OK
 * for a write that did not commit; once the network is back, everything
 * works again without a restart, and waiters are woken by later changes.
 */

/** How a caller without a deadline is bounded: the internal default deadline, plus slack for a loaded machine. */
const UNBOUNDED_CALL_ANSWERED_WITHIN_MS = 10_000 + 5_000;
/** The partition between state and Postgres outlasts the listener's heartbeat check (about 10 s). */
const DATABASE_PARTITION_MS = 14_000;
/** A dead internal session is replaced within a ping interval and timeout; the bound adds slack. */
const SESSION_REPLACED_WITHIN_MS = INTERNAL_KEEPALIVE.pingIntervalMs + INTERNAL_KEEPALIVE.pingTimeoutMs + 10_000;
/** A wake-up that takes milliseconds once the path is back, far below a waiting claim's 60 s. */
const WOKEN_WITHIN_MS = 25_000;

let cluster: DocketCluster;
let databaseUrl: string;
let databaseProxy: TcpProxy;
let stateProxy: TcpProxy | undefined;

beforeAll(async () => {
  databaseUrl = await createMigratedTestDatabase('network partitions');
  const proxied = await TcpProxy.inFrontOf(databaseUrl);
  databaseProxy = proxied.proxy;
  cluster = await startCluster({
    databaseUrl: proxied.url,
    // Only a wake from the change stream can end a waiting claim early.
    env: { execution: { DOCKET_CLAIM_RECHECK_MS: '60000' } },
    stateUrlFor: async (url) => {
      const front = await TcpProxy.inFrontOf(url);
      stateProxy = front.proxy;
      return front.url;
    },
  });
});

afterAll(async () => {
  await stopAll();
  await stateProxy?.close();
  await databaseProxy?.close();
});

/** A subscriber following a fresh job, caught up; and a claim waiting on an empty queue. */
async function waiters(owner: string, label: string) {
  const admission = clientFor(AdmissionService, cluster.admission.url, owner);
  const events = clientFor(EventService, cluster.events.url, owner);
  const queue = freshQueue(label);
  const execution = clientFor(ExecutionService, cluster.execution.url, await cluster.tokenFor(`${label}-worker`, 'worker', [queue]));
  const { workerIncarnation } = await execution.registerWorker({ workerName: `${label}-worker`, queues: [queue], maxConcurrency: 1 });
  const { job: followed } = await admission.submitJob({ idempotencyKey: newIdempotencyKey(label), queue: freshQueue(`${label}-followed`), input: {} });
  const stream = new StreamReader<StreamJobEventsResponse>(events.streamJobEvents({ jobId: followed!.id })[Symbol.asyncIterator]());
  expect(await stream.next(isPage)).toBeDefined();
  const claimRequest = { workerIncarnation, maxJobs: 1, wait: durationFromMs(60_000), operationId: newOperationId() };
  // A long poll re-tries its claim when the change stream wakes it; a re-try that meets the partition ends the call
  // with a transient code (it cannot know whether the claim committed), and a worker claims again with the same
  // operation id, which replays a committed claim. Any other failure fails the test.
  const claim = execution.claimJobs(claimRequest).then(
    (answer) => answer,
    (error: unknown) => {
      if (!TRANSIENT.includes(ConnectError.from(error).code)) throw error;
      return 'retry' as const;
    },
  );
  return {
    /** Once the path is back: a new job on the claim's queue wakes it, and a cancel of the followed job reaches the subscriber. */
    async expectWoken(): Promise<void> {
      const { job } = await admission.submitJob({ idempotencyKey: newIdempotencyKey('wake'), queue, input: {} }, { timeoutMs: 10_000 });
      const waited = claim.then((answer) => (answer === 'retry' ? execution.claimJobs(claimRequest) : answer));
      // Real time: a timeout race, the bound on a wake-up.
      const claimed = await Promise.race([waited, sleep(WOKEN_WITHIN_MS, 'not woken' as const)]);
      expect(claimed === 'not woken' ? claimed : claimed.assignments.map((assignment) => assignment.envelope!.jobId)).toEqual([job!.id]);
      await admission.cancelJob({ idempotencyKey: newIdempotencyKey('cancel'), jobId: followed!.id }, { timeoutMs: 10_000 });
      const types: string[] = [];
      await stream.next((frame) => {
        if (frame.frame.case === 'page') types.push(...frame.frame.value.events.map((event) => event.type));
        return types.includes('job.cancelled');
      }, WOKEN_WITHIN_MS);
      expect(types).toContain('job.cancelled');
      await stream.cancel();
    },
  };
}

function isPage(frame: StreamJobEventsResponse): boolean {
  return frame.frame.case === 'page';
}

/**
 * Runs a SubmitJob load on a fresh queue while `fault` runs, then checks
 * what every partition must leave: some calls were refused, no process
 * exited, the waiters wake once the path is back, and nothing was lost or
 * invented.
 */
async function partitionUnderLoad(label: string, fault: (admission: Client<typeof AdmissionService>) => Promise<void>): Promise<void> {
  const owner = await cluster.tokenFor(`${label}-owner`, 'user');
  const admission = clientFor(AdmissionService, cluster.admission.url, owner);
  const waiting = await waiters(owner, label);
  const queue = freshQueue(`${label}-load`);
  const load = generateLoad(admission, queue);
  let record: LoadRecord;
  try {
    await until(async () => load.record.acknowledged.size >= 10, 'the load to be under way');
    await fault(admission);
    const atRecovery = load.record.acknowledged.size;
    await until(async () => load.record.acknowledged.size >= atRecovery + 10, 'some load after recovery too');
  } finally {
    record = await load.stop();
  }
  expect(record.refused.size).toBeGreaterThan(0);
  expect(await exitedServices(cluster)).toEqual([]);
  // The connections the waiters' wake-ups travel on were cut for good: only Docket's checks can have replaced them.
  await waiting.expectWoken();
  await expectNothingLostOrInvented(admission, databaseUrl, queue, record);
}

describe('silent partitions with half-open connections', () => {
  it('between state and Postgres: calls fail within their deadlines, nothing unacknowledged is OK, and after healing everything works and waiters wake', async () => {
    await partitionUnderLoad('db-partition', async (admission) => {
      databaseProxy.partition();
      // A caller that set no deadline is still answered, by the internal default deadline.
      const startedAt = performance.now();
      const unbounded = await settle(admission.submitJob({ idempotencyKey: newIdempotencyKey('unbounded'), queue: freshQueue('unbounded'), input: {} }));
      const answeredAfterMs = performance.now() - startedAt;
      expect(unbounded.ok ? 'OK' : TRANSIENT.includes(unbounded.failure.code)).toBe(true);
      expect(answeredAfterMs).toBeLessThan(UNBOUNDED_CALL_ANSWERED_WITHIN_MS);
      // Real time: the partition must outlast the listener's real heartbeat check (about 10 s).
      await sleep(Math.max(0, DATABASE_PARTITION_MS - answeredAfterMs));
      expect(databaseProxy.liveConnections).toBe(0);
      databaseProxy.heal();
      await until(() => recovered(cluster, admission), 'SubmitJob to succeed again after the partition', 30_000);
    });
  });

  it('between a front service and state: calls fail within their deadlines, dead sessions are replaced after healing, and streams resume', async () => {
    expect(stateProxy).toBeDefined();
    await partitionUnderLoad('front-partition', async (admission) => {
      stateProxy!.partition();
      // Real time: a partition that lasts, so that calls in flight on the cut sessions fail and the sessions stay dead.
      await sleep(3_000);
      // Every session open now is dead for good; the front services must notice on their own.
      stateProxy!.heal();
      await until(() => recovered(cluster, admission), 'admission to reach state on a new session', SESSION_REPLACED_WITHIN_MS);
    });
  });
});

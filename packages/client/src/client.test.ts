import { Code, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type DocketCluster } from '../../../test/support/cluster.js';
import { createMigratedTestDatabase } from '../../../test/support/database.js';
import { startClusterWithSql, stopClustersWithSql } from '../../../test/support/cluster-with-sql.js';
import { JobWriter, readWholeJournal } from '../../../test/support/job-writer.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { ResyncReason } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { createClient } from './create-client.js';
import type { DocketClient } from './docket-client.js';
import { isDocketClientError, type DocketClientError } from './docket-client-error.js';
import type { JobWatchFrame } from './job-watch.js';
import type { RetryPolicy } from './retry-policy.js';
import { bearerAuth } from './transports.js';

/*
 * The client against a real cluster (four service processes, a fresh
 * database): what a user of `@docket/client` relies on. Tests that restart
 * or kill a service run last, in this order, because they share the cluster.
 */

const OWNER = 'client-owner';

let cluster: DocketCluster;
let sql: pg.Client;
let token: string;
let client: DocketClient;
let writer: JobWriter;

beforeAll(async () => {
  ({ cluster, sql } = await startClusterWithSql(startCluster, {
    databaseUrl: await createMigratedTestDatabase('client sdk'),
    env: { events: { DOCKET_HEARTBEAT_MS: '500', DOCKET_SHUTDOWN_GRACE_MS: '2000' } },
  }));
  token = await cluster.tokenFor(OWNER, 'user');
  client = createClient({ admissionUrl: cluster.admission.url, eventsUrl: cluster.events.url, token });
  writer = new JobWriter(cluster.state.url, cluster.serviceToken, OWNER);
});

afterAll(async () => {
  client?.close();
  await stopClustersWithSql();
});

async function jobCount(queue: string): Promise<number> {
  const result = await sql.query<{ n: string }>('select count(*) as n from jobs where owner = $1 and queue = $2', [OWNER, queue]);
  return Number(result.rows[0]!.n);
}

async function failureOf(call: Promise<unknown>): Promise<DocketClientError> {
  try {
    await call;
  } catch (error) {
    if (!isDocketClientError(error)) throw error;
    return error;
  }
  throw new Error('expected the call to fail');
}

/** Every frame of a watch that is expected to end by itself. */
async function collect(frames: AsyncIterable<JobWatchFrame>, onEvent?: (sequence: bigint) => Promise<void>): Promise<bigint[]> {
  const sequences: bigint[] = [];
  for await (const frame of frames) {
    if (frame.kind !== 'event') continue;
    sequences.push(frame.event.sequence);
    await onEvent?.(frame.event.sequence);
  }
  return sequences;
}

describe('submit', () => {
  it('admits one job per key: a repeat with the same key replays it', async () => {
    const queue = 'client-replay';
    const first = await client.submit({ queue, input: { n: 1 } });
    expect(first).toMatchObject({ replayed: false, job: { queue, input: { n: 1 } } });
    expect(first.idempotencyKey).toMatch(/^[A-Za-z0-9._~-]{16,128}$/);
    expect(first.idempotencyExpiresAt!.getTime()).toBeGreaterThan(Date.now());

    const again = await client.submit({ queue, input: { n: 1 } }, { idempotencyKey: first.idempotencyKey });
    expect(again.replayed).toBe(true);
    expect(again.job.id).toBe(first.job.id);
    expect(await jobCount(queue)).toBe(1);
  });

  it('surfaces a key reused for another request as ALREADY_EXISTS / IDEMPOTENCY_CONFLICT, without the key in the message, and retries it never', async () => {
    const queue = 'client-conflict';
    const { idempotencyKey } = await client.submit({ queue, input: { n: 1 } });
    const failure = await failureOf(client.submit({ queue, input: { n: 2 } }, { idempotencyKey }));
    expect(failure).toMatchObject({ name: 'DocketClientError', code: Code.AlreadyExists, reason: 'IDEMPOTENCY_CONFLICT' });
    // The service sends no ErrorInfo metadata for this reason today; the client passes on exactly what it sends.
    expect(failure.metadata).toEqual({});
    expect(failure.message).not.toContain(idempotencyKey);
    expect(failure.message).not.toContain(token);
    expect(await jobCount(queue)).toBe(1);
  });

  it('decodes ErrorInfo metadata and BadRequest field violations (LIMIT_EXCEEDED)', async () => {
    const failure = await failureOf(client.submit({ queue: 'client-limit', input: { blob: 'x'.repeat(300 * 1024) } }));
    expect(failure).toMatchObject({ code: Code.InvalidArgument, reason: 'LIMIT_EXCEEDED', metadata: { limit: 'jobInputBytes', max: '262144' } });
    expect(failure.fieldViolations.map((v) => v.field)).toContain('input');
  });
});

describe('list', () => {
  it('iterates every job of the filter across pages, newest first', async () => {
    const queue = 'client-list';
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await client.submit({ queue, input: { i } })).job.id);
    const listed: string[] = [];
    for await (const job of client.list({ queue, pageSize: 3 })) listed.push(job.id);
    expect(listed).toEqual([...ids].reverse());
  });
});

describe('watch', () => {
  it('yields the journal of a job cancelled meanwhile, verified, and ends', async () => {
    const { job } = await client.submit({ queue: 'client-watch', input: {} });
    const sequences = await collect(client.watch(job.id), async (sequence) => {
      if (sequence === 1n) await client.cancel(job.id);
    });
    const journal = await readWholeJournal(cluster.events.url, token, job.id);
    expect(journal.map((event) => event.type)).toEqual(['job.admitted', 'job.cancelled']);
    expect(sequences).toEqual(journal.map((event) => event.sequence));
    expect(await client.result(job.id)).toMatchObject({ id: job.id, status: JobStatus.CANCELLED });
  });

  it('rejects a journal whose chain was broken in the database with DATA_LOSS / JOURNAL_CORRUPT, yielding nothing from the break on', async () => {
    const { job } = await client.submit({ queue: 'client-tamper', input: {} });
    await writer.append(job.id, 4);
    await sql.query(`update job_events set payload = payload || '{"amount": 1000000}' where job_id = $1 and sequence = 3`, [job.id]);
    const seen: bigint[] = [];
    const failure = await failureOf(collect(client.watch(job.id), async (sequence) => void seen.push(sequence)));
    expect(failure).toMatchObject({ code: Code.DataLoss, reason: 'JOURNAL_CORRUPT', metadata: expect.objectContaining({ sequence: '3' }) });
    expect(seen.every((sequence) => sequence < 3n)).toBe(true);
  });
});

describe('watchJobs', () => {
  it('starts at a snapshot cursor and resumes after an events-service restart from the latest cursor', async () => {
    const queue = 'client-feed';
    const filter = { queue };
    const before = await client.submit({ queue, input: { n: 0 } });
    const snapshot = await client.listPage({ queue });
    expect(snapshot.jobs.map((job) => job.id)).toEqual([before.job.id]);

    const fresh = client.watchJobs({ filter })[Symbol.asyncIterator]();
    expect((await fresh.next()).value).toMatchObject({ kind: 'resync_required', reason: ResyncReason.CURSOR_ABSENT });
    await fresh.return();

    const feed = client.watchJobs({ cursor: snapshot.eventCursor, filter })[Symbol.asyncIterator]();
    try {
      const second = await client.submit({ queue, input: { n: 1 } });
      // The snapshot's cursor may sit before a change the listing already holds (its consistency point
      // is held back while a transaction could still precede it): that change may come again first,
      // an invalidation of what the listing showed, never a gap.
      let next = (await feed.next()).value;
      if (next?.kind === 'job_changed' && next.change.jobId === before.job.id) next = (await feed.next()).value;
      expect(next).toMatchObject({ kind: 'job_changed', change: { jobId: second.job.id, status: JobStatus.QUEUED } });

      // The feed connection dies with the process; the next frames come from the new one.
      await cluster.events.restart();
      const third = await client.submit({ queue, input: { n: 2 } });
      expect((await feed.next()).value).toMatchObject({ kind: 'job_changed', change: { jobId: third.job.id } });
      await client.cancel(third.job.id);
      expect((await feed.next()).value).toMatchObject({ kind: 'job_changed', change: { jobId: third.job.id, status: JobStatus.CANCELLED } });
    } finally {
      await feed.return();
    }
  }, 60_000);
});

describe('watch across an events-service restart', () => {
  it('resumes from the last sequence: no gap, no duplicate, and every hash verified', async () => {
    const { job } = await client.submit({ queue: 'client-restart', input: {} });
    await writer.append(job.id, 5);
    let restarted = false;
    const sequences = await collect(client.watch(job.id), async (sequence) => {
      if (sequence === 6n && !restarted) {
        restarted = true;
        const oldPid = cluster.events.process.pid;
        await cluster.events.restart();
        expect(cluster.events.process.pid).not.toBe(oldPid);
        await writer.retrying(() => writer.append(job.id, 5));
        await writer.retrying(() => writer.cancel(job.id));
      }
    });
    expect(restarted).toBe(true);
    const journal = await readWholeJournal(cluster.events.url, token, job.id);
    expect(journal).toHaveLength(12);
    expect(sequences).toEqual(journal.map((event) => event.sequence));
  }, 60_000);
});

/** A client on caller-built transports (the browser path) that counts its calls by RPC and every try of each idempotency key. */
function countingClient(options: { readonly coalesceSubmissions?: boolean; readonly retry?: Partial<RetryPolicy> } = {}) {
  const calls = new Map<string, number>();
  const triesByKey = new Map<string, number>();
  const count: Interceptor = (next) => async (request) => {
    calls.set(request.method.name, (calls.get(request.method.name) ?? 0) + 1);
    const message = request.message as { idempotencyKey?: string; items?: { idempotencyKey: string }[] };
    for (const key of message.items?.map((item) => item.idempotencyKey) ?? [message.idempotencyKey]) {
      if (key) triesByKey.set(key, (triesByKey.get(key) ?? 0) + 1);
    }
    return next(request);
  };
  const transportTo = (baseUrl: string) => createGrpcTransport({ baseUrl, interceptors: [bearerAuth(token), count] });
  const counted = createClient({ transports: { admission: transportTo(cluster.admission.url), events: transportTo(cluster.events.url) }, ...options });
  return { client: counted, calls, triesByKey };
}

describe('coalesced submissions (coalesceSubmissions)', () => {
  it('shares SubmitJobs calls among concurrent submits, each with its own job, key and error', async () => {
    const queue = 'client-coalesced';
    const { client: coalescing, calls } = countingClient({ coalesceSubmissions: true });
    const JOBS = 40;
    const shared = 'client-coalesced-shared-key';
    // A bad submission among them, in the same turn: it fails alone.
    const refusal = failureOf(coalescing.submit({ queue: 'not a queue name!', input: {} }));
    const receipts = await Promise.all([
      ...Array.from({ length: JOBS }, (_, i) => coalescing.submit({ queue, input: { i } })),
      // Two submissions of one request under one key, in the same call: one job.
      coalescing.submit({ queue, input: { shared: true } }, { idempotencyKey: shared }),
      coalescing.submit({ queue, input: { shared: true } }, { idempotencyKey: shared }),
    ]);
    const refused = await refusal;

    expect(calls.get('SubmitJob')).toBeUndefined();
    // Made in one turn with no call in flight: one call carries all of them, the bad one too.
    expect(calls.get('SubmitJobs')).toBe(1);
    for (const [i, receipt] of receipts.slice(0, JOBS).entries()) expect(receipt.job.input).toEqual({ i });
    expect(new Set(receipts.slice(0, JOBS).map((receipt) => receipt.job.id)).size).toBe(JOBS);
    const [first, second] = receipts.slice(JOBS);
    expect(second!.job.id).toBe(first!.job.id);
    expect(await jobCount(queue)).toBe(JOBS + 1);
    // The refusal SubmitJob gives the same submission, code, reason and field.
    const alone = await failureOf(client.submit({ queue: 'not a queue name!', input: {} }));
    expect({ code: refused.code, reason: refused.reason, fields: refused.fieldViolations }).toEqual({ code: alone.code, reason: alone.reason, fields: alone.fieldViolations });
    expect(refused.code).toBe(Code.InvalidArgument);
    coalescing.close();
  });

  it('keeps SubmitJob\'s idempotency contract: a replay, a conflict on a changed request, and a large job sent alone', async () => {
    const queue = 'client-coalesced-keys';
    const { client: coalescing, calls } = countingClient({ coalesceSubmissions: true });
    const first = await coalescing.submit({ queue, input: { n: 1 } });
    const [replay, conflict] = await Promise.all([
      coalescing.submit({ queue, input: { n: 1 } }, { idempotencyKey: first.idempotencyKey }),
      failureOf(coalescing.submit({ queue, input: { n: 2 } }, { idempotencyKey: first.idempotencyKey })),
    ]);
    expect(replay).toMatchObject({ replayed: true, job: { id: first.job.id } });
    expect({ code: conflict.code, reason: conflict.reason }).toEqual({ code: Code.AlreadyExists, reason: 'IDEMPOTENCY_CONFLICT' });
    expect(conflict.message).not.toContain(first.idempotencyKey);
    const large = await coalescing.submit({ queue, input: { blob: 'x'.repeat(20 * 1024) } });
    expect(large.job.input).toEqual({ blob: 'x'.repeat(20 * 1024) });
    expect(calls.get('SubmitJob')).toBe(1);
    expect(await jobCount(queue)).toBe(2);
    coalescing.close();
  });
});

describe.each([
  ['one call per submission', false],
  ['coalesced submissions', true],
])('submit across a state-service crash (%s)', (_, coalesceSubmissions) => {
  it('retries calls in flight with their keys: exactly one job per key, given or generated', async () => {
    const queue = `client-crash-${coalesceSubmissions ? 'coalesced' : 'alone'}`;
    // Caller-built transports (the browser path), with an interceptor that records every try's key.
    const { client: patient, triesByKey } = countingClient({ coalesceSubmissions, retry: { tries: 30, initialDelayMs: 100, maxDelayMs: 1_000 } });
    const CALLS = 60;
    // Even calls bring their own key; odd calls let the client draw one.
    const givenKey = (i: number) => (i % 2 === 0 ? `${queue}-key-${String(i).padStart(4, '0')}` : undefined);
    let started = 0;
    const calls = Array.from({ length: CALLS }, async (_, i) => {
      // Spread the calls so that some are in flight when the process dies and some start while it is down.
      // Real time: pacing the calls of this load.
      await new Promise((resolve) => setTimeout(resolve, i * 15));
      started += 1;
      const idempotencyKey = givenKey(i);
      return patient.submit({ queue, input: { i } }, idempotencyKey === undefined ? {} : { idempotencyKey });
    });
    // Real time: the kill falls a few calls into the paced load, with most still to start.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const startedBeforeKill = started;
    await cluster.state.kill();
    // Real time: the state process stays down while paced calls keep starting.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await cluster.state.restart();
    const receipts = await Promise.all(calls);

    expect(startedBeforeKill).toBeGreaterThan(0);
    expect(startedBeforeKill).toBeLessThan(CALLS);
    // The crash was felt: some calls needed more than one try, each try with the call's one key.
    expect(Math.max(...triesByKey.values())).toBeGreaterThan(1);
    expect(triesByKey.size).toBe(CALLS);
    for (const [i, receipt] of receipts.entries()) if (givenKey(i)) expect(receipt.idempotencyKey).toBe(givenKey(i));
    expect(new Set(receipts.map((r) => r.idempotencyKey)).size).toBe(CALLS);
    expect(new Set(receipts.map((r) => r.job.id)).size).toBe(CALLS);
    expect(await jobCount(queue)).toBe(CALLS);
    // Every key replays the job it was answered with.
    for (const [i, receipt] of receipts.entries()) {
      const again = await patient.submit({ queue, input: { i } }, { idempotencyKey: receipt.idempotencyKey });
      expect(again).toMatchObject({ replayed: true, job: { id: receipt.job.id } });
    }
  }, 90_000);
});

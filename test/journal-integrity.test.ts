import { fromBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { Code, type Client } from '@connectrpc/connect';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GENESIS_HASH, canonicalJsonByteLength, verifyChainSegment, type JsonValue } from '@docket/contracts';
import { EventSchema } from '@docket/proto/docket/common/v1/event_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { StateService, type NewEventSchema } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { clientFor, failureOf } from './support/clients.js';
import type { DocketServices } from './support/docket-services.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startClusterWithSql, stopClustersWithSql } from './support/cluster-with-sql.js';
import { JobWriter, submitJobs } from './support/job-writer.js';
import { storedJob, type StoredEventRow } from './support/sql.js';

/*
 * Transition with events (SPEC sections 4 and 6), against the state
 * service's internal API with the service token, on real processes: what
 * commits commits together, what is refused leaves no trace, sequences stay
 * contiguous under concurrent writers, and pages resume strictly after
 * their cursor.
 */

const OWNER = 'journal-owner';
const caller = { subject: OWNER, admin: false };

let cluster: DocketServices;
let sql: pg.Client;
let state: Client<typeof StateService>;
let ownerToken: string;

beforeAll(async () => {
  ({ cluster, sql } = await startClusterWithSql(startInProcessCluster, { databaseUrl: await createMigratedTestDatabase('journal integrity') }));
  state = clientFor(StateService, cluster.state.url, cluster.serviceToken);
  ownerToken = await cluster.tokenFor(OWNER, 'user');
});

afterAll(stopClustersWithSql);

/** A new QUEUED job of the owner's, whose journal is `[job.admitted]`. */
async function newJob(): Promise<string> {
  const [jobId] = await submitJobs(cluster.admission.url, ownerToken, 1);
  return jobId!;
}

/** `count` events of type `worker.step` whose payloads say which they are: `{tag, index}`. */
function workerSteps(count: number, tag = 'step'): MessageInitShape<typeof NewEventSchema>[] {
  return Array.from({ length: count }, (_, index) => ({ type: 'worker.step', payload: { tag, index } }));
}

/** Everything stored about a job, its feed entries included: what a refused transition must not touch. */
async function footprint(jobId: string) {
  const changes = await sql.query('select * from job_changes where job_id = $1 order by transaction_id, entry_id', [jobId]);
  return { ...(await storedJob(sql, jobId)), changes: changes.rows };
}

interface JobRowView {
  status: string;
  revision: string;
  event_count: string;
  head_hash: string;
  request_digest: string;
}

async function rowsOf(jobId: string): Promise<{ job: JobRowView; events: StoredEventRow[] }> {
  const { job, events } = await storedJob(sql, jobId);
  return { job: job as JobRowView, events };
}

/** The stored journal verifies from genesis and ends at the job row's count and head. */
function expectChainIntact(job: JobRowView, events: readonly StoredEventRow[]): void {
  expect(events.map((event) => BigInt(event.sequence))).toEqual(events.map((_, index) => BigInt(index + 1)));
  const verdict = verifyChainSegment(
    events.map((event) => ({
      jobId: event.job_id,
      requestDigest: job.request_digest,
      sequence: BigInt(event.sequence),
      previousHash: event.previous_hash,
      type: event.type,
      payload: event.payload,
      occurredAt: event.occurred_at,
      hash: event.hash,
    })),
    { jobId: events[0]!.job_id, requestDigest: job.request_digest, previousHash: GENESIS_HASH, previousSequence: 0 },
  );
  expect(verdict).toEqual({ ok: true, headHash: job.head_hash, lastSequence: BigInt(job.event_count) });
}

/** A payload whose canonical JSON (`{"data":"xx..."}`) is exactly `bytes` long. */
function payloadOfBytes(bytes: number): { data: string } {
  const payload = { data: 'x'.repeat(bytes - '{"data":""}'.length) };
  expect(canonicalJsonByteLength(payload)).toBe(bytes);
  return payload;
}

async function runningJob(): Promise<string> {
  const jobId = await newJob();
  await state.transitionJob({ caller, jobId, toStatus: JobStatus.RUNNING, events: [{ type: 'attempt.started', payload: {} }] });
  return jobId;
}

describe('a transition commits its status, revision and events together', () => {
  it('moves the status, bumps the revision once and extends the chain with contiguous sequences', async () => {
    const jobId = await newJob();
    const before = await rowsOf(jobId);
    const response = await state.transitionJob({
      caller,
      jobId,
      expectedRevision: BigInt(before.job.revision),
      toStatus: JobStatus.RUNNING,
      events: workerSteps(3),
    });
    expect(response).toMatchObject({ firstSequence: 2n, lastSequence: 4n });
    expect(response.job).toMatchObject({ status: JobStatus.RUNNING, revision: BigInt(before.job.revision) + 1n, latestSequence: 4n });
    const after = await rowsOf(jobId);
    expect(after.job).toMatchObject({ status: 'RUNNING', revision: String(BigInt(before.job.revision) + 1n), event_count: '4' });
    expect(after.events.slice(1).map((event) => [event.sequence, event.payload])).toEqual([
      ['2', { tag: 'step', index: 0 }],
      ['3', { tag: 'step', index: 1 }],
      ['4', { tag: 'step', index: 2 }],
    ]);
    expectChainIntact(after.job, after.events);
  });

  it('accepts the limits themselves: 64 events, and a payload of exactly 64 KiB of canonical JSON', async () => {
    const jobId = await newJob();
    expect(await state.transitionJob({ caller, jobId, events: workerSteps(64) })).toMatchObject({ firstSequence: 2n, lastSequence: 65n });
    const payload = payloadOfBytes(65_536);
    expect(await state.transitionJob({ caller, jobId, events: [{ type: 'worker.blob', payload }] })).toMatchObject({ lastSequence: 66n });
    const { job, events } = await rowsOf(jobId);
    expect(events.at(-1)!.payload).toEqual(payload);
    expectChainIntact(job, events);
  });
});

describe('a refused transition leaves the job and its journal exactly as they were', () => {
  const refusals: [string, () => MessageInitShape<typeof NewEventSchema>[], { code: Code; reason: string; metadata?: object; violations?: object[] }][] = [
    [
      'an empty event batch',
      () => [],
      { code: Code.InvalidArgument, reason: 'INVALID_FIELD', violations: [expect.objectContaining({ field: 'events' })] },
    ],
    [
      '65 events',
      () => workerSteps(65),
      { code: Code.InvalidArgument, reason: 'LIMIT_EXCEEDED', metadata: { limit: 'eventBatch', max: '64' } },
    ],
    [
      'a payload of 64 KiB + 1 byte of canonical JSON',
      () => [...workerSteps(2), { type: 'worker.blob', payload: payloadOfBytes(65_537) }],
      {
        code: Code.InvalidArgument,
        reason: 'LIMIT_EXCEEDED',
        metadata: { limit: 'eventPayloadBytes', max: '65536' },
        violations: [expect.objectContaining({ field: 'events[2].payload' })],
      },
    ],
  ];

  it.each(refusals)('%s', async (_, events, expected) => {
    const jobId = await runningJob();
    const before = await footprint(jobId);
    const failure = await failureOf(state.transitionJob({ caller, jobId, toStatus: JobStatus.SUCCEEDED, events: events() }));
    expect(failure).toMatchObject(expected);
    expect(await footprint(jobId)).toEqual(before);
    expect((before.job as JobRowView).status).toBe('RUNNING');
  });

  it('an illegal edge (SUCCEEDED -> RUNNING) is FAILED_PRECONDITION / ILLEGAL_TRANSITION', async () => {
    const jobId = await runningJob();
    await state.transitionJob({ caller, jobId, toStatus: JobStatus.SUCCEEDED, events: [{ type: 'job.succeeded', payload: {} }] });
    const before = await footprint(jobId);
    expect((before.job as JobRowView).status).toBe('SUCCEEDED');
    const failure = await failureOf(
      state.transitionJob({ caller, jobId, toStatus: JobStatus.RUNNING, events: [{ type: 'attempt.started', payload: {} }] }),
    );
    expect(failure).toMatchObject({ code: Code.FailedPrecondition, reason: 'ILLEGAL_TRANSITION' });
    expect(await footprint(jobId)).toEqual(before);
  });

  it('a failure after the events were written takes them back with it', async () => {
    const jobId = await runningJob();
    const before = await footprint(jobId);
    // The feed entry is among the last writes of a transition: refuse it for this job only.
    await sql.query(`
      create function refuse_feed_entry() returns trigger language plpgsql as $$
      begin
        if new.job_id = '${jobId}' then raise exception 'injected failure'; end if;
        return new;
      end $$;
      create trigger refuse_feed_entry before insert on job_changes for each row execute function refuse_feed_entry();
    `);
    try {
      const failure = await failureOf(
        state.transitionJob({ caller, jobId, toStatus: JobStatus.SUCCEEDED, events: workerSteps(3) }),
      );
      expect(failure.code).toBe(Code.Internal);
      expect(await footprint(jobId)).toEqual(before);
    } finally {
      await sql.query('drop trigger refuse_feed_entry on job_changes; drop function refuse_feed_entry();');
    }
    const retried = await state.transitionJob({ caller, jobId, toStatus: JobStatus.SUCCEEDED, events: workerSteps(3) });
    expect(retried.firstSequence).toBe(BigInt((before.job as JobRowView).event_count) + 1n);
  });

  it('a stale expected_revision is ABORTED / REVISION_MISMATCH; the current one commits', async () => {
    const jobId = await runningJob();
    const before = await footprint(jobId);
    const current = BigInt((before.job as JobRowView).revision);
    for (const stale of [current - 1n, current + 1n]) {
      const failure = await failureOf(state.transitionJob({ caller, jobId, expectedRevision: stale, events: workerSteps(1) }));
      expect(failure).toMatchObject({ code: Code.Aborted, reason: 'REVISION_MISMATCH' });
      expect(await footprint(jobId)).toEqual(before);
    }
    const committed = await state.transitionJob({ caller, jobId, expectedRevision: current, events: workerSteps(1) });
    expect(committed.job?.revision).toBe(current + 1n);
  });
});

describe('events stay contiguous under concurrent writers', () => {
  it('50 parallel transitions of one job get disjoint, gap-free sequence ranges and one valid chain', async () => {
    const jobId = await newJob();
    const before = await rowsOf(jobId);
    const writers = 50;
    const perWriter = 3;
    const responses = await Promise.all(
      Array.from({ length: writers }, (_, writer) =>
        state.transitionJob({ caller, jobId, events: workerSteps(perWriter, `writer-${writer}`) }),
      ),
    );

    const ranges = responses.map((response) => [response.firstSequence, response.lastSequence] as const);
    for (const [first, last] of ranges) expect(last - first).toBe(BigInt(perWriter - 1));
    const covered = ranges.flatMap(([first]) => Array.from({ length: perWriter }, (_, offset) => first + BigInt(offset)));
    expect(covered.sort((a, b) => (a < b ? -1 : 1))).toEqual(
      Array.from({ length: writers * perWriter }, (_, index) => BigInt(index + 2)),
    );

    const { job, events } = await rowsOf(jobId);
    expect(events).toHaveLength(1 + writers * perWriter);
    expect(job).toMatchObject({
      event_count: String(1 + writers * perWriter),
      revision: String(BigInt(before.job.revision) + BigInt(writers)),
    });
    expectChainIntact(job, events);
    responses.forEach((response, writer) => {
      const own = events.filter((event) => BigInt(event.sequence) >= response.firstSequence && BigInt(event.sequence) <= response.lastSequence);
      expect(own.map((event) => event.payload)).toEqual(workerSteps(perWriter, `writer-${writer}`).map((event) => event.payload));
    });
  });
});

describe('ReadJobEvents pages', () => {
  let jobId: string;
  let latest: bigint;

  beforeAll(async () => {
    jobId = await newJob();
    const writer = new JobWriter(cluster.state.url, cluster.serviceToken, OWNER);
    for (let batch = 0; batch < 5; batch += 1) latest = (await writer.append(jobId, 64, `batch-${batch}`)).lastSequence;
  });

  const read = (afterSequence: bigint, pageSize = 0, pageCount = 0) => state.readJobEvents({ caller, jobId, afterSequence, pageSize, pageCount });

  it('answer the same events encoded when asked (`encoded`): each the bytes of its Event, whatever the payload', async () => {
    const varied = await newJob();
    const payloads: { [key: string]: JsonValue }[] = [
      { text: 'ünïcode ✓ 😀', empty: '', nothing: null, yes: true, no: false },
      { nested: { list: [1, 'two', null, [3.5, { deep: {} }]], big: 2 ** 53, negative: -0.25 }, empty: {}, none: [] },
      { long: 'é'.repeat(5_000) },
      {},
    ];
    await state.transitionJob({ caller, jobId: varied, events: payloads.map((payload) => ({ type: 'worker.step', payload })) });
    for (const afterSequence of [0n, 2n]) {
      const plain = await state.readJobEvents({ caller, jobId: varied, afterSequence, pageSize: 256 });
      const encoded = await state.readJobEvents({ caller, jobId: varied, afterSequence, pageSize: 256, encoded: true });
      expect(encoded.events).toEqual([]);
      expect(plain.encodedEvents).toEqual([]);
      expect(encoded.encodedEvents.map((bytes) => fromBinary(EventSchema, bytes))).toEqual(plain.events);
      expect({ ...encoded, events: [], encodedEvents: [] }).toEqual({ ...plain, events: [], encodedEvents: [] });
    }
    expect((await state.readJobEvents({ caller, jobId: varied, afterSequence: 0n, encoded: true })).encodedEvents).toHaveLength(payloads.length + 1);
  });

  it('use 100 events for page_size 0 and at most 256 for larger sizes', async () => {
    expect(latest).toBe(321n);
    const byDefault = await read(0n, 0);
    expect(byDefault.events.map((event) => event.sequence)).toEqual(Array.from({ length: 100 }, (_, index) => BigInt(index + 1)));
    expect(byDefault.latestSequence).toBe(latest);
    expect(byDefault.status).toBe(JobStatus.QUEUED);
    expect((await read(0n, 300)).events).toHaveLength(256);
    expect((await read(0n, 7)).events).toHaveLength(7);
  });

  it('answer page_count pages at once, up to 8, each event verified and in order', async () => {
    const stored = (await rowsOf(jobId)).events.map((event) => ({ sequence: BigInt(event.sequence), hash: event.hash }));
    const hashes = (page: { events: { sequence: bigint; hash: string }[] }) => page.events.map((event) => ({ sequence: event.sequence, hash: event.hash }));
    expect(hashes(await read(0n, 100, 3))).toEqual(stored.slice(0, 300));
    expect(hashes(await read(0n, 30, 9))).toEqual(stored.slice(0, 240));
    expect(hashes(await read(20n, 256, 4))).toEqual(stored.slice(20));
    expect((await read(0n, 0, 1)).events).toHaveLength(100);
    expect(await failureOf(read(0n, 10, -1))).toMatchObject({
      code: Code.InvalidArgument,
      reason: 'INVALID_FIELD',
      violations: [expect.objectContaining({ field: 'page_count' })],
    });
  });

  it('refuse a negative page_size or cursor as INVALID_ARGUMENT', async () => {
    expect(await failureOf(read(0n, -1))).toMatchObject({
      code: Code.InvalidArgument,
      reason: 'INVALID_FIELD',
      violations: [expect.objectContaining({ field: 'page_size' })],
    });
    expect(await failureOf(read(-1n, 10))).toMatchObject({
      code: Code.InvalidArgument,
      reason: 'INVALID_FIELD',
      violations: [expect.objectContaining({ field: 'after_sequence' })],
    });
  });

  it('resume strictly after their cursor and together return the stored journal exactly once', async () => {
    const stored = (await rowsOf(jobId)).events;
    for (const pageSize of [37, 100, 256]) {
      const seen: { sequence: bigint; hash: string }[] = [];
      let cursor = 0n;
      for (;;) {
        const page = await read(cursor, pageSize);
        expect(page.latestSequence).toBe(latest);
        if (page.events.length === 0) break;
        expect(page.events[0]!.sequence).toBe(cursor + 1n);
        seen.push(...page.events.map((event) => ({ sequence: event.sequence, hash: event.hash })));
        cursor = page.events.at(-1)!.sequence;
      }
      expect(seen).toEqual(stored.map((event) => ({ sequence: BigInt(event.sequence), hash: event.hash })));
    }
    for (const after of [1n, 99n, 250n, 320n]) {
      const page = await read(after, 5);
      expect(page.events.map((event) => event.sequence)).toEqual(
        Array.from({ length: Number(latest - after < 5n ? latest - after : 5n) }, (_, index) => after + 1n + BigInt(index)),
      );
      expect(page.events[0]!.previousHash).toBe(stored[Number(after) - 1]!.hash);
    }
  });

  it('return an empty page at the latest sequence, and OUT_OF_RANGE / CURSOR_BEYOND_LATEST above it', async () => {
    expect(await read(latest, 10)).toMatchObject({ events: [], latestSequence: latest });
    for (const beyond of [latest + 1n, latest + 1000n, 2n ** 63n - 300n, 2n ** 63n - 1n]) {
      expect(await failureOf(read(beyond, 10))).toMatchObject({ code: Code.OutOfRange, reason: 'CURSOR_BEYOND_LATEST' });
    }
  });
});

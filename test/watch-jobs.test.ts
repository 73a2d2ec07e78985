import { setTimeout as sleep } from 'node:timers/promises';
import { Code, type Client } from '@connectrpc/connect';
import { openToken } from '@docket/contracts';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import type { MessageInitShape } from '@bufbuild/protobuf';
import {
  EventService,
  ResyncReason,
  type WatchJobsRequestSchema,
  type WatchJobsResponse,
} from '@docket/proto/docket/events/v1/event_service_pb.js';
import { clientFor, failureOf } from './support/clients.js';
import type { DocketServices } from './support/docket-services.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startClusterWithSql, stopClustersWithSql } from './support/cluster-with-sql.js';
import { JobWriter, submitJobs } from './support/job-writer.js';
import { openSql } from './support/sql.js';
import { StreamReader } from './support/stream-probe.js';

const HEARTBEAT_MS = 300;

/** A WatchJobs request as the client library accepts it. */
type WatchJobsInit = MessageInitShape<typeof WatchJobsRequestSchema>;

let cluster: DocketServices;
let databaseUrl: string;
let sql: pg.Client;
let alice: string;
let bob: string;
let writeAsAlice: JobWriter;
let writeAsBob: JobWriter;

beforeAll(async () => {
  databaseUrl = await createMigratedTestDatabase('watch jobs');
  ({ cluster, sql } = await startClusterWithSql(startInProcessCluster, { databaseUrl, env: { events: { DOCKET_HEARTBEAT_MS: String(HEARTBEAT_MS) } } }));
  alice = await cluster.tokenFor('alice', 'user');
  bob = await cluster.tokenFor('bob', 'user');
  writeAsAlice = new JobWriter(cluster.state.url, cluster.serviceToken, 'alice');
  writeAsBob = new JobWriter(cluster.state.url, cluster.serviceToken, 'bob');
});

afterAll(stopClustersWithSql);

/** A WatchJobs subscription the test reads frame by frame, and cancels at the end. */
class Feed {
  readonly #abort = new AbortController();
  readonly #frames: StreamReader<WatchJobsResponse>;
  /** The cursor of the last frame read. */
  cursor = '';

  constructor(events: Client<typeof EventService>, request: WatchJobsInit = {}) {
    this.#frames = new StreamReader(events.watchJobs(request, { signal: this.#abort.signal })[Symbol.asyncIterator]());
  }

  /** The next frame that is not a heartbeat (heartbeats still move the cursor). */
  async next(timeoutMs = 5_000): Promise<WatchJobsResponse> {
    const frame = await this.#frames.next(
      (candidate) => {
        this.cursor = candidate.cursor;
        return candidate.frame.case !== 'heartbeat';
      },
      timeoutMs,
    );
    if (!frame) throw new Error('the feed ended');
    return frame;
  }

  /** The job ids of the next `count` job_changed frames. */
  async changes(count: number): Promise<{ jobId: string; revision: bigint; cursor: string }[]> {
    const seen = [];
    while (seen.length < count) {
      const frame = await this.next();
      if (frame.frame.case !== 'jobChanged') throw new Error(`expected job_changed, got ${frame.frame.case}`);
      seen.push({ jobId: frame.frame.value.jobId, revision: frame.frame.value.revision, cursor: frame.cursor });
    }
    return seen;
  }

  /** The job_changed frames up to and including the first that `last` accepts. */
  async changesUntil(last: (change: { jobId: string; revision: bigint }) => boolean): Promise<{ jobId: string; revision: bigint; cursor: string }[]> {
    const seen = [];
    for (;;) {
      const [change] = await this.changes(1);
      seen.push(change!);
      if (last(change!)) return seen;
    }
  }

  /** Fails if a job_changed frame arrives within `ms`. */
  async expectQuiet(ms: number): Promise<void> {
    await expect(this.next(ms)).rejects.toThrow(/no wanted frame/);
  }

  close(): void {
    this.#abort.abort();
  }
}

/** Opens a feed and consumes its `resync_required` frame (the request carries no usable cursor). */
async function feedAtHead(token: string, request: WatchJobsInit = {}): Promise<{ feed: Feed; reason: ResyncReason }> {
  const feed = new Feed(clientFor(EventService, cluster.events.url, token), request);
  const first = await feed.next();
  if (first.frame.case !== 'resyncRequired') throw new Error(`expected resync_required, got ${first.frame.case}`);
  expect(first.cursor).not.toBe('');
  return { feed, reason: first.frame.value.reason };
}

describe('WatchJobs', () => {
  it('delivers a transaction that took its id first but committed last, in commit-safe order, after its neighbours', async () => {
    const submitted = await submitJobs(cluster.admission.url, alice, 4);
    const [early, before, after1, after2] = submitted;
    const { feed } = await feedAtHead(alice);
    try {
      await writeAsAlice.append(before!, 1);
      // A feed opened at its head may start before the admissions that committed just before it (its
      // consistency point is held back while a transaction could still precede it): they may come
      // first, at revision 1, and then the append.
      const first = await feed.changesUntil((change) => change.jobId === before && change.revision === 2n);
      expect(first.slice(0, -1).filter((change) => !submitted.includes(change.jobId) || change.revision !== 1n)).toEqual([]);

      // A transaction takes its id now, writes a feed entry the way the state
      // service does, and stays open while two later transactions commit.
      const late = await openSql(databaseUrl);
      try {
        await late.query('begin');
        const { rows } = await late.query<{ xid: string }>('select pg_current_xact_id()::text as xid');
        await late.query(
          `insert into job_changes (job_id, owner, queue, revision, status, lifecycle, changed_at)
           values ($1, 'alice', 'journal', 7, 'QUEUED', 'ACTIVE', now())`,
          [early],
        );
        await late.query(`select pg_notify('docket_job_changes', $1)`, [
          JSON.stringify({ job_id: early, latest_sequence: '1', status: 'QUEUED' }),
        ]);
        await writeAsAlice.append(after1!, 1);
        await writeAsAlice.append(after2!, 1);
        const later = await sql.query<{ xid: string }>(
          'select transaction_id::text as xid from job_changes where job_id = any($1) and revision = 2',
          [[after1, after2]],
        );
        // Both later transactions wrote their feed entry, each with a larger transaction id.
        expect(later.rows).toHaveLength(2);
        for (const row of later.rows) expect(BigInt(row.xid)).toBeGreaterThan(BigInt(rows[0]!.xid));
        // Committed, but behind a transaction that is still running: held back.
        await feed.expectQuiet(800);
        await late.query('commit');
      } finally {
        await late.end();
      }
      const delivered = await feed.changes(3);
      expect(delivered.map((change) => change.jobId)).toEqual([early, after1, after2]);
      expect(delivered[0]?.revision).toBe(7n);
    } finally {
      feed.close();
    }
  });

  it("resumes from any frame's cursor with exactly the changes after it: no gap, no duplicate", async () => {
    const jobs = await submitJobs(cluster.admission.url, alice, 5);
    const { feed } = await feedAtHead(alice);
    const seen: { jobId: string; revision: bigint; cursor: string }[] = [];
    try {
      for (let round = 0; round < 6; round += 1) {
        await Promise.all(jobs.map((jobId) => writeAsAlice.append(jobId, 1)));
      }
      // A feed opened at its head may start before the admissions that committed just before it: they
      // come first, at revision 1 (see the commit-safe test above). The 30 appends follow them.
      const delivered: typeof seen = [];
      while (delivered.filter((change) => change.revision > 1n).length < 30) delivered.push(...(await feed.changes(1)));
      const firstAppend = delivered.findIndex((change) => change.revision > 1n);
      expect(delivered.slice(0, firstAppend).filter((change) => !jobs.includes(change.jobId) || change.revision !== 1n)).toEqual([]);
      seen.push(...delivered.slice(firstAppend));
    } finally {
      feed.close();
    }
    expect(seen).toHaveLength(30);
    expect(new Set(seen.map((change) => `${change.jobId}@${change.revision}`)).size).toBe(30);
    for (const from of [0, 7, 18, 29]) {
      const resumed = new Feed(clientFor(EventService, cluster.events.url, alice), { cursor: seen[from]!.cursor });
      try {
        const rest = await resumed.changes(29 - from);
        expect(rest.map((change) => `${change.jobId}@${change.revision}`)).toEqual(
          seen.slice(from + 1).map((change) => `${change.jobId}@${change.revision}`),
        );
        // A later change arrives next: nothing in between, nothing repeated.
        await writeAsAlice.append(jobs[0]!, 1);
        const [next] = await resumed.changes(1);
        expect(next?.jobId).toBe(jobs[0]);
      } finally {
        resumed.close();
      }
    }
  });

  it('gives each frame a cursor that lives its full time from when it was sent, also to a subscriber that reaches the change later', async () => {
    const [jobId] = await submitJobs(cluster.admission.url, alice, 1);
    const early = new Feed(clientFor(EventService, cluster.events.url, alice));
    const expiry = (cursor: string) => Number(openToken(cursor, cluster.cursorSecret)!['exp']);
    try {
      const atHead = await early.next();
      await writeAsAlice.append(jobId!, 1);
      const [first] = await early.changes(1);
      // The same entry, from the same window, sent to a second subscriber 1.5 s later.
      // Real time: a cursor's expiry is sealed from the wall clock when it is sent; the assertion is about that clock moving on.
      await sleep(1_500);
      const late = new Feed(clientFor(EventService, cluster.events.url, alice), { cursor: atHead.cursor });
      try {
        const [again] = await late.changes(1);
        expect([again!.jobId, again!.revision]).toEqual([first!.jobId, first!.revision]);
        expect(expiry(again!.cursor) - expiry(first!.cursor)).toBeGreaterThanOrEqual(1_000);
      } finally {
        late.close();
      }
    } finally {
      early.close();
    }
  });

  it("never shows a user another user's job; admins see both", async () => {
    const [alicesJob] = await submitJobs(cluster.admission.url, alice, 1);
    const [bobsJob] = await submitJobs(cluster.admission.url, bob, 1);
    const { feed: bobsFeed } = await feedAtHead(bob);
    const { feed: adminFeed } = await feedAtHead(await cluster.tokenFor('root', 'admin'));
    try {
      await writeAsAlice.append(alicesJob!, 1);
      await writeAsAlice.cancel(alicesJob!);
      await writeAsBob.append(bobsJob!, 1);
      // A feed opened at its head may still start before an admission committed just before it
      // (the head holds back what a running transaction could precede): revision 1 may come first.
      const after = (changes: { jobId: string; revision: bigint }[]) => changes.filter((change) => change.revision > 1n).map((change) => `${change.jobId}@${change.revision}`);
      const bobsChanges = await bobsFeed.changesUntil((change) => change.jobId === bobsJob && change.revision === 2n);
      expect(new Set(bobsChanges.map((change) => change.jobId))).toEqual(new Set([bobsJob]));
      expect(after(bobsChanges)).toEqual([`${bobsJob}@2`]);
      await bobsFeed.expectQuiet(500);
      const adminChanges = await adminFeed.changesUntil((change) => change.jobId === bobsJob && change.revision === 2n);
      expect(after(adminChanges)).toEqual([`${alicesJob}@2`, `${alicesJob}@3`, `${bobsJob}@2`]);
    } finally {
      bobsFeed.close();
      adminFeed.close();
    }
  });

  it('filters by status and queue, and refuses an UNSPECIFIED status as INVALID_FIELD', async () => {
    const [queued, cancelled] = await submitJobs(cluster.admission.url, alice, 2);
    const [otherQueue] = await submitJobs(cluster.admission.url, alice, 1, 'elsewhere');
    const { feed } = await feedAtHead(alice, { filter: { statuses: [JobStatus.CANCELLED], queue: 'journal' } });
    try {
      await writeAsAlice.append(queued!, 1);
      await writeAsAlice.cancel(otherQueue!);
      await writeAsAlice.cancel(cancelled!);
      const [change] = await feed.changes(1);
      expect(change?.jobId).toBe(cancelled);
      await feed.expectQuiet(500);
    } finally {
      feed.close();
    }
    const events = clientFor(EventService, cluster.events.url, alice);
    const refused = await failureOf(
      (async () => {
        for await (const frame of events.watchJobs({ filter: { statuses: [JobStatus.UNSPECIFIED] } })) void frame;
      })(),
    );
    expect(refused).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD', violations: [{ field: 'filter.statuses[0]' }] });
  });

  it('answers an absent, tampered, foreign or other-filter cursor with resync_required and a fresh cursor, then continues', async () => {
    const [jobId] = await submitJobs(cluster.admission.url, alice, 1);
    const { feed, reason } = await feedAtHead(alice);
    expect(reason).toBe(ResyncReason.CURSOR_ABSENT);
    await writeAsAlice.append(jobId!, 1);
    const [change] = await feed.changes(1);
    feed.close();
    const cursor = change!.cursor;
    const tampered = `${cursor.slice(0, 10)}${cursor[10] === 'A' ? 'B' : 'A'}${cursor.slice(11)}`;
    const cases: [string, WatchJobsInit, ResyncReason][] = [
      [alice, { cursor: tampered }, ResyncReason.CURSOR_INVALID],
      [alice, { cursor: 'not-a-cursor' }, ResyncReason.CURSOR_INVALID],
      [bob, { cursor }, ResyncReason.CURSOR_FOREIGN],
      [alice, { cursor, filter: { statuses: [JobStatus.QUEUED], queue: '' } }, ResyncReason.CURSOR_INVALID],
    ];
    for (const [token, request, expected] of cases) {
      const resynced = await feedAtHead(token, request);
      try {
        expect(resynced.reason).toBe(expected);
        // The stream continues from the fresh cursor at the head.
        await writeAsAlice.append(jobId!, 1);
        if (token === alice) expect((await resynced.feed.changes(1))[0]?.jobId).toBe(jobId);
        else await resynced.feed.expectQuiet(300);
      } finally {
        resynced.feed.close();
      }
    }
  });

  it('resumes from the event_cursor of a GetJob snapshot without a resync, with every change after it', async () => {
    const [jobId] = await submitJobs(cluster.admission.url, alice, 1);
    const { job } = await clientFor(AdmissionService, cluster.admission.url, alice).getJob({ jobId: jobId! });
    await writeAsAlice.append(jobId!, 1);
    const feed = new Feed(clientFor(EventService, cluster.events.url, alice), { cursor: job!.eventCursor });
    try {
      // The snapshot's cursor may sit before the submission's own change (the consistency point is
      // held back while a transaction could still precede it): that change may come again first, a
      // duplicate invalidation of what GetJob showed, never a gap and never a resync (changes() fails on one).
      const seen = await feed.changesUntil((change) => change.jobId === jobId && change.revision > job!.revision);
      expect(seen.map(({ jobId: id, revision }) => ({ jobId: id, revision }))).toEqual([
        ...seen.slice(0, -1).map(() => ({ jobId, revision: job!.revision })),
        { jobId, revision: job!.revision + 1n },
      ]);
    } finally {
      feed.close();
    }
  });

  it('sends heartbeats carrying the current cursor when nothing changes', async () => {
    const { feed } = await feedAtHead(bob);
    const frames = new StreamReader(clientFor(EventService, cluster.events.url, bob).watchJobs({ cursor: feed.cursor })[Symbol.asyncIterator]());
    feed.close();
    const started = performance.now();
    const heartbeat = await frames.next((frame) => frame.frame.case === 'heartbeat', HEARTBEAT_MS * 4);
    expect(performance.now() - started).toBeGreaterThan(HEARTBEAT_MS * 0.75);
    expect(heartbeat?.cursor).not.toBe('');
    await frames.cancel();
  });
});

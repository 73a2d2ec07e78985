import { createHash } from 'node:crypto';
import { Code } from '@connectrpc/connect';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '@docket/contracts';
import { AdmissionService, type SubmitJobResponse } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { expectAdmissionsWhole, expectJournalVerifies, inParallel, keyHashOf, sameAdmission, submitJobDigest, type SubmitJobInit } from './support/admission-audit.js';
import { clientFor, settle, type Settled } from './support/clients.js';
import type { DocketServices } from './support/docket-services.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startClusterWithSql, stopClustersWithSql } from './support/cluster-with-sql.js';
import { newIdempotencyKey } from './support/keys.js';
import { openSql } from './support/sql.js';

/*
 * Group-committed admission (SPEC section 3) on real processes: two
 * admission and two state processes, every state process deciding the
 * AdmitJob calls that arrive together in one transaction (at most
 * BATCH_MAX per transaction here). One burst of 500 SubmitJob calls mixes
 * every kind of item a batch can hold, and every caller must get the
 * answer its own request deserves, exactly as if it had been alone.
 */

const OWNER = 'batch-owner';
const BATCH_MAX = 32;
const NEW_KEYS = 340;
const DUPLICATES = 100;
const CONFLICTS = 20;
const INVALID_KEYS = 20;

let cluster: DocketServices;
let sql: pg.Client;
let token: string;

beforeAll(async () => {
  ({ cluster, sql } = await startClusterWithSql(startInProcessCluster, {
    databaseUrl: await createMigratedTestDatabase('admission batches'),
    replicas: { state: 2, admission: 2 },
    env: { state: { DOCKET_ADMIT_BATCH_MAX: String(BATCH_MAX) } },
  }));
  token = await cluster.tokenFor(OWNER, 'user');
});

afterAll(stopClustersWithSql);

type Kind = 'new' | 'duplicate' | 'conflict' | 'replay' | 'invalid';

/** One call of the burst: what it is, what it sends, through which admission replica. */
interface BurstItem {
  readonly kind: Kind;
  readonly request: SubmitJobInit;
  readonly replica: number;
  /** For `conflict` and `replay`: which pre-admitted original it names. */
  readonly original?: number;
}

/** A deterministic shuffle (a fixed LCG), so a failing order can be replayed. */
function shuffled<T>(items: readonly T[], seed = 20261129): T[] {
  const out = [...items];
  let state = seed;
  for (let index = out.length - 1; index > 0; index -= 1) {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    const other = state % (index + 1);
    [out[index], out[other]] = [out[other] as T, out[index] as T];
  }
  return out;
}

function newRequest(index: number): SubmitJobInit {
  return {
    idempotencyKey: newIdempotencyKey(`new-${index}`),
    queue: `batch-q${index % 4}`,
    input: { n: index, tag: `new-${index}`, nested: { even: index % 2 === 0, list: [index, `x${index}`] } },
    label: `item ${index}`,
    priority: index % 7,
  };
}

/** Keys refused before anything is decided: too short, too long, characters outside [A-Za-z0-9._~-]. */
function invalidKey(index: number): string {
  const suffix = String(index).padStart(4, '0');
  const bad = [`short${suffix}`, `${'y'.repeat(125)}${suffix}`, `with a space ${suffix}-0000`, `slash/in/key/${suffix}`, `ümlaut-key-${suffix}-0000`];
  return bad[index % bad.length]!;
}

describe('500 concurrent SubmitJob calls in coalesced batches', () => {
  it(
    'give exactly one job per key and every caller the answer for its own item, with verifiable journals',
    async () => {
      const admissions = cluster.replicas.admission.map((replica) => clientFor(AdmissionService, replica.url, token));
      expect(new Set(cluster.replicas.state.map((replica) => replica.url)).size).toBe(2);

      // Jobs admitted before the burst, whose keys the burst reuses: with a changed input (conflicts) and unchanged (replays).
      const originals = Array.from({ length: CONFLICTS }, (_, index): SubmitJobInit => ({
        idempotencyKey: newIdempotencyKey(`original-${index}`),
        queue: 'batch-originals',
        input: { original: index },
      }));
      const originalResponses = await inParallel(originals, 8, (request, index) => admissions[index % 2]!.submitJob(request));
      expect(originalResponses.every((response) => !response.replayed)).toBe(true);

      // The burst, in units: a conflict is sent right before a replay of the same key, through the same
      // admission (and so state) process. (Whether the two share a batch depends on the burst's timing;
      // the next describe block makes them share one.)
      const duplicate: SubmitJobInit = { idempotencyKey: newIdempotencyKey('duplicate'), queue: 'batch-dup', input: { the: 'one' } };
      const units: Omit<BurstItem, 'replica'>[][] = [
        ...Array.from({ length: NEW_KEYS }, (_, index) => [{ kind: 'new' as const, request: newRequest(index) }]),
        ...Array.from({ length: DUPLICATES }, () => [{ kind: 'duplicate' as const, request: duplicate }]),
        ...originals.map((original, index) => [
          { kind: 'conflict' as const, original: index, request: { ...original, input: { original: index, changed: true } } },
          { kind: 'replay' as const, original: index, request: original },
        ]),
        ...Array.from({ length: INVALID_KEYS }, (_, index) => [
          { kind: 'invalid' as const, request: { idempotencyKey: invalidKey(index), queue: 'batch-invalid', input: { index } } },
        ]),
      ];
      const items: BurstItem[] = shuffled(units).flatMap((unit, unitIndex) => unit.map((item) => ({ ...item, replica: unitIndex % 2 })));
      expect(items).toHaveLength(NEW_KEYS + DUPLICATES + 2 * CONFLICTS + INVALID_KEYS);
      expect(items).toHaveLength(500);

      const answers: Settled<SubmitJobResponse>[] = await Promise.all(
        items.map((item) => settle(admissions[item.replica]!.submitJob(item.request))),
      );
      const answersOf = (kind: Kind) => items.flatMap((item, index) => (item.kind === kind ? [{ item, answer: answers[index]! }] : []));
      const describeAnswer = (answer: Settled<SubmitJobResponse>) =>
        answer.ok ? { ok: true, replayed: answer.value.replayed } : { ok: false, code: Code[answer.failure.code], reason: answer.failure.reason };

      // New keys: each its own job, not a replay, holding exactly what was submitted.
      const fresh = answersOf('new');
      expect(fresh.map(({ answer }) => describeAnswer(answer))).toEqual(fresh.map(() => ({ ok: true, replayed: false })));
      const freshJobs = fresh.map(({ item, answer }) => ({ item, job: (answer as { value: SubmitJobResponse }).value.job! }));
      expect(new Set(freshJobs.map(({ job }) => job.id)).size).toBe(NEW_KEYS);
      for (const { item, job } of freshJobs) {
        expect(job).toMatchObject({
          owner: OWNER,
          queue: item.request.queue,
          label: item.request.label,
          priority: item.request.priority,
          input: item.request.input,
          status: JobStatus.QUEUED,
          revision: 1n,
          latestSequence: 1n,
        });
      }

      // 100 duplicates of one key: one job, one first answer, 99 replays of exactly that answer.
      const duplicates = answersOf('duplicate');
      expect(duplicates.every(({ answer }) => answer.ok)).toBe(true);
      const duplicateResponses = duplicates.map(({ answer }) => (answer as { value: SubmitJobResponse }).value);
      expect(new Set(duplicateResponses.map((response) => response.job?.id)).size).toBe(1);
      expect(duplicateResponses.filter((response) => !response.replayed)).toHaveLength(1);
      expect(duplicateResponses.filter((response) => response.replayed)).toHaveLength(DUPLICATES - 1);
      expect(duplicateResponses.every((response) => sameAdmission(response, duplicateResponses[0]!))).toBe(true);
      expect(duplicateResponses[0]!.job).toMatchObject({ queue: 'batch-dup', input: { the: 'one' } });

      // A changed request under an admitted key is IDEMPOTENCY_CONFLICT; the unchanged one, even when it
      // shares a batch with the conflicting one, replays the original response unchanged.
      const conflicts = answersOf('conflict');
      expect(conflicts.map(({ answer }) => describeAnswer(answer))).toEqual(
        conflicts.map(() => ({ ok: false, code: Code[Code.AlreadyExists], reason: 'IDEMPOTENCY_CONFLICT' })),
      );
      const replays = answersOf('replay');
      expect(replays.map(({ answer }) => describeAnswer(answer))).toEqual(replays.map(() => ({ ok: true, replayed: true })));
      for (const { item, answer } of replays) {
        expect(sameAdmission((answer as { value: SubmitJobResponse }).value, originalResponses[item.original!]!)).toBe(true);
      }

      // Invalid keys: refused with a field violation on idempotency_key, before any batch.
      const invalid = answersOf('invalid');
      for (const { answer } of invalid) {
        expect(answer.ok).toBe(false);
        if (answer.ok) continue;
        expect(answer.failure).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FIELD' });
        expect(answer.failure.violations.map((violation) => violation.field)).toEqual(['idempotency_key']);
      }

      // What is stored: exactly one whole admission (binding, job row, job.admitted, one feed entry) per
      // admitted key, bound to its own request's digest and naming the job its caller was given; nothing
      // for the conflicting requests or the invalid keys.
      const bindings = await expectAdmissionsWhole(sql, OWNER);
      expect(bindings.size).toBe(NEW_KEYS + 1 + CONFLICTS);
      const admitted: { request: SubmitJobInit; jobId: string }[] = [
        ...freshJobs.map(({ item, job }) => ({ request: item.request, jobId: job.id })),
        { request: duplicate, jobId: duplicateResponses[0]!.job!.id },
        ...originals.map((request, index) => ({ request, jobId: originalResponses[index]!.job!.id })),
      ];
      for (const { request, jobId } of admitted) bindings.expectBound(request, jobId);
      for (const { item } of invalid) expect(bindings.of(item.request.idempotencyKey!)).toBeUndefined();
      const { rows: stored } = await sql.query<{ id: string; input: JsonValue; queue: string }>(
        'select id, input, queue from jobs where owner = $1',
        [OWNER],
      );
      const storedById = new Map(stored.map((row) => [row.id, row]));
      for (const { request, jobId } of admitted) expect(storedById.get(jobId)).toMatchObject({ input: request.input, queue: request.queue });

      // The calls really were coalesced: the burst's jobs were admitted by fewer transactions than jobs,
      // several per transaction, and never more than a batch's maximum in one.
      const burstJobIds = [...freshJobs.map(({ job }) => job.id), duplicateResponses[0]!.job!.id];
      const { rows: transactions } = await sql.query<{ jobs: number }>(
        'select count(*)::int as jobs from jobs where id = any($1) group by created_xid order by 1 desc',
        [burstJobIds],
      );
      expect(transactions.reduce((sum, row) => sum + row.jobs, 0)).toBe(burstJobIds.length);
      expect(transactions.length).toBeLessThan(burstJobIds.length / 4);
      expect(transactions[0]!.jobs).toBeGreaterThan(1);
      expect(transactions[0]!.jobs).toBeLessThanOrEqual(BATCH_MAX);

      // Every journal, read through the events service, verifies from genesis with the digest of the
      // job's own submission, and its job.admitted event describes that submission's input.
      await inParallel(admitted, 16, async ({ request, jobId }) => {
        const journal = await expectJournalVerifies(cluster.events.url, token, jobId, submitJobDigest(OWNER, request));
        expect(journal.map((event) => event.type)).toEqual(['job.admitted']);
        expect(journal[0]!.payload).toMatchObject({
          queue: request.queue,
          input_sha256: createHash('sha256').update(canonicalJson(request.input as JsonValue)).digest('hex'),
        });
      });
    },
    120_000,
  );
});

describe('items of one batch that share a key', () => {
  /** Calls sent first, so that the state process's batches in flight are busy and the calls after them wait and go together. */
  const FILLERS = 10;
  const ROUNDS = 10;
  const fillers = (round: number): SubmitJobInit[] =>
    Array.from({ length: FILLERS }, (_, index) => ({ idempotencyKey: newIdempotencyKey(`filler-${round}-${index}`), queue: 'batch-fillers', input: { round, index } }));
  const outcome = (answer: Settled<SubmitJobResponse>) =>
    answer.ok ? { ok: true, replayed: answer.value.replayed } : { ok: false, code: Code[answer.failure.code], reason: answer.failure.reason };

  it('answer each request for itself: an unchanged request beside a conflicting one for an admitted key replays the original', async () => {
    const admission = clientFor(AdmissionService, cluster.replicas.admission[0]!.url, token);
    const seen: unknown[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const original: SubmitJobInit = { idempotencyKey: newIdempotencyKey(`shared-${round}`), queue: 'batch-shared', input: { round } };
      const first = await admission.submitJob(original);
      const changed: SubmitJobInit = { ...original, input: { round, changed: true } };
      const answers = await Promise.all([...fillers(round), changed, original].map((request) => settle(admission.submitJob(request))));
      const [conflict, replay] = answers.slice(FILLERS) as [Settled<SubmitJobResponse>, Settled<SubmitJobResponse>];
      seen.push({ conflict: outcome(conflict), replay: outcome(replay), sameAsOriginal: replay.ok && sameAdmission(replay.value, first) });
    }
    expect(seen).toEqual(
      seen.map(() => ({
        conflict: { ok: false, code: Code[Code.AlreadyExists], reason: 'IDEMPOTENCY_CONFLICT' },
        replay: { ok: true, replayed: true },
        sameAsOriginal: true,
      })),
    );
  });

  it('admit a key not yet bound once: the first request wins, a different one conflicts, an equal one replays it', async () => {
    const admission = clientFor(AdmissionService, cluster.replicas.admission[0]!.url, token);
    for (let round = 0; round < ROUNDS; round += 1) {
      const key = newIdempotencyKey(`contested-${round}`);
      const a: SubmitJobInit = { idempotencyKey: key, queue: 'batch-contested', input: { round, version: 'a' } };
      const b: SubmitJobInit = { ...a, input: { round, version: 'b' } };
      const answers = await Promise.all([...fillers(round), a, b, a].map((request) => settle(admission.submitJob(request))));
      const [first, second, third] = answers.slice(FILLERS) as Settled<SubmitJobResponse>[];
      const winner = first!.ok ? a : b;
      const won = (first!.ok ? first : second) as { ok: true; value: SubmitJobResponse };
      expect(won.value).toMatchObject({ replayed: false, job: { input: winner.input } });
      expect(outcome(winner === a ? second! : first!)).toEqual({ ok: false, code: Code[Code.AlreadyExists], reason: 'IDEMPOTENCY_CONFLICT' });
      if (winner === a) {
        expect(outcome(third!)).toEqual({ ok: true, replayed: true });
        expect(third!.ok && sameAdmission(third!.value, won.value)).toBe(true);
      } else {
        expect(outcome(third!)).toEqual({ ok: false, code: Code[Code.AlreadyExists], reason: 'IDEMPOTENCY_CONFLICT' });
      }
      const { rows } = await sql.query<{ job_id: string; request_digest: string }>(
        "select job_id, request_digest from idempotency_records where encode(key_hash, 'hex') = $1",
        [keyHashOf(key)],
      );
      expect(rows).toEqual([{ job_id: won.value.job!.id, request_digest: submitJobDigest(OWNER, winner) }]);
    }
    await expectAdmissionsWhole(sql, OWNER);
  });
});

describe('a batch that admits nothing', () => {
  it('announces nothing: replays and conflicts send no change notification, and every announcement lists the jobs it admitted', async () => {
    const admission = clientFor(AdmissionService, cluster.replicas.admission[0]!.url, token);
    const request: SubmitJobInit = { idempotencyKey: newIdempotencyKey('quiet'), queue: 'batch-quiet', input: {} };
    const admitted = await admission.submitJob(request);

    const listener = await openSql(cluster.databaseUrl);
    try {
      const payloads: string[] = [];
      listener.on('notification', (notification) => payloads.push(notification.payload ?? ''));
      await listener.query('listen docket_job_changes');
      // Each call alone: a batch of one replay, then one of one conflict. Nothing else writes meanwhile.
      expect((await admission.submitJob(request)).replayed).toBe(true);
      expect((await settle(admission.submitJob({ ...request, input: { changed: true } }))).ok).toBe(false);
      // A notification is delivered after its transaction commits, before the answer reaches us; a
      // round trip on the listening connection flushes any that are in flight.
      await listener.query('select 1');
      expect(payloads).toEqual([]);

      // And one that does admit announces exactly its job (docs/write-path.md: {"jobs": [[job_id, ...]]}).
      const next = await admission.submitJob({ ...request, idempotencyKey: newIdempotencyKey('loud') });
      await expect.poll(() => payloads.length).toBeGreaterThan(0);
      expect(payloads.map((payload) => JSON.parse(payload) as unknown)).toEqual([{ jobs: [[next.job!.id, '1', 'QUEUED', 'batch-quiet']] }]);
      expect(admitted.job!.id).not.toBe(next.job!.id);
    } finally {
      await listener.end();
    }
    for (const replica of cluster.replicas.state) {
      expect(replica.logs.filter((line) => line.includes('unreadable change announcement'))).toEqual([]);
    }
  });
});

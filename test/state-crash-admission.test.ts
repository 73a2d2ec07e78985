import { Code } from '@connectrpc/connect';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@docket/client';
import { AdmissionService, type SubmitJobResponse } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { expectAdmissionsWhole, expectJournalVerifies, inParallel, sameAdmission, submitJobDigest, type SubmitJobInit } from './support/admission-audit.js';
import { clientFor, settle, type Settled } from './support/clients.js';
import { startCluster, type DocketCluster } from './support/cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startClusterWithSql, stopClustersWithSql } from './support/cluster-with-sql.js';
import { newIdempotencyKey } from './support/keys.js';
import { until } from './support/polling.js';

/*
 * A state process killed with SIGKILL while its admission batches are in
 * flight (SPEC section 3: "A restart of any service ... never forgets a
 * binding"). Two admission and two state processes share the burst; state
 * replica 0 is killed a quarter of the way through and restarted on the
 * same port while the burst goes on. Whatever was in flight in the killed
 * process either committed whole or left nothing: every acknowledged
 * admission replays afterwards, nothing unacknowledged half-exists, and a
 * failed call retried with its key ends in exactly one job.
 */

const OWNER = 'crash-owner';
const TOTAL = 400;
const CONCURRENCY = 64;
const KILL_AFTER_ANSWERS = TOTAL / 4;

let cluster: DocketCluster;
let sql: pg.Client;
let token: string;

beforeAll(async () => {
  ({ cluster, sql } = await startClusterWithSql(startCluster, {
    databaseUrl: await createMigratedTestDatabase('state crash admission'),
    replicas: { state: 2, admission: 2 },
  }));
  token = await cluster.tokenFor(OWNER, 'user');
});

afterAll(stopClustersWithSql);

describe('kill -9 of a state process while admission batches are in flight', () => {
  const requests: SubmitJobInit[] = Array.from({ length: TOTAL }, (_, index) => ({
    idempotencyKey: newIdempotencyKey(`crash-${index}`),
    queue: `crash-q${index % 3}`,
    input: { index, payload: `item-${index}` },
    priority: index % 5,
  }));
  let admissions: ReturnType<typeof clientFor<typeof AdmissionService>>[];
  /** Admission replica i talks to state replica i: even calls go through the process that is killed. */
  const through = (index: number) => admissions[index % 2]!;
  let answers: Settled<SubmitJobResponse>[];
  let succeededAt: number[];
  let failedAt: number[];
  const responseAt = (index: number) => (answers[index] as { value: SubmitJobResponse }).value;

  beforeAll(async () => {
    admissions = cluster.replicas.admission.map((replica) => clientFor(AdmissionService, replica.url, token));
    const victim = cluster.replicas.state[0]!;
    let answered = 0;
    let restarting: Promise<unknown> | undefined;
    answers = await inParallel(requests, CONCURRENCY, async (request, index) => {
      const answer = await settle(through(index).submitJob(request));
      answered += 1;
      // SIGKILL (no drain) a quarter of the way in, then a new process on the same port while the burst goes on.
      if (answered === KILL_AFTER_ANSWERS) restarting = victim.kill().then(() => victim.restart());
      return answer;
    });
    await restarting;
    expect(await victim.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(cluster.replicas.state[0]!.process.pid).not.toBe(victim.process.pid);
    succeededAt = answers.flatMap((answer, index) => (answer.ok ? [index] : []));
    failedAt = answers.flatMap((answer, index) => (answer.ok ? [] : [index]));
  }, 90_000);

  it('bit: calls through the killed process failed, others succeeded before and after it', () => {
    expect(failedAt.length).toBeGreaterThan(0);
    expect(succeededAt.length).toBeGreaterThan(KILL_AFTER_ANSWERS / 2);
    for (const index of succeededAt) expect(responseAt(index).replayed).toBe(false);
  });

  it('leaves nothing half-admitted: every binding has its job, event 1 and feed entry, every job its binding', async () => {
    // expectAdmissionsWhole: every key in idempotency_records has its job row, exactly its one
    // job.admitted event and one feed entry; no job of the owner exists without its binding.
    const bindings = await expectAdmissionsWhole(sql, OWNER);
    for (const index of succeededAt) bindings.expectBound(requests[index]!, responseAt(index).job!.id);
  });

  it('replays every acknowledged admission identically, through the restarted state process too', async () => {
    for (const replica of [0, 1]) {
      const replays = await inParallel(succeededAt, 32, (index) => admissions[replica]!.submitJob(requests[index]!));
      for (const [position, index] of succeededAt.entries()) {
        expect(replays[position]!.replayed).toBe(true);
        expect(sameAdmission(replays[position]!, responseAt(index))).toBe(true);
      }
    }
  });

  it('lets every failed call be retried with its key into exactly one job, whose journal verifies', async () => {
    const before = await expectAdmissionsWhole(sql, OWNER);
    // The one whose COMMIT landed before the answer was lost (a replay), or a new one if nothing was written.
    const retried = await inParallel(failedAt, 32, (index) => through(index).submitJob(requests[index]!));
    for (const [position, index] of failedAt.entries()) before.expectRetryAnswer(requests[index]!, retried[position]!);
    const after = await expectAdmissionsWhole(sql, OWNER);
    expect(after.size).toBe(TOTAL);
    const jobOf = (index: number) => (answers[index]!.ok ? responseAt(index) : retried[failedAt.indexOf(index)]!).job!;
    for (const [index, request] of requests.entries()) {
      expect(after.of(request.idempotencyKey!)?.job_id).toBe(jobOf(index).id);
      expect(jobOf(index)).toMatchObject({ queue: request.queue, input: request.input, priority: request.priority });
    }
    await inParallel(requests, 16, async (request, index) => {
      const journal = await expectJournalVerifies(cluster.events.url, token, jobOf(index).id, submitJobDigest(OWNER, request));
      expect(journal.map((event) => event.type)).toEqual(['job.admitted']);
    });
  });

  it('answers the calls it could not decide UNAVAILABLE, the code clients retry', () => {
    const seen: Record<string, number> = {};
    for (const index of failedAt) {
      const { code, reason } = (answers[index] as { failure: { code: Code; reason?: string } }).failure;
      const key = `${Code[code]}/${reason}`;
      seen[key] = (seen[key] ?? 0) + 1;
    }
    expect(Object.keys(seen).filter((key) => key !== 'Unavailable/UNAVAILABLE'), JSON.stringify(seen)).toEqual([]);
  });
});

describe('kill -9 of a state process while a SubmitJobs call of 1,000 items is in flight', () => {
  const subject = 'crash-batch-owner';
  const items: SubmitJobInit[] = Array.from({ length: 1_000 }, (_, index) => ({
    idempotencyKey: newIdempotencyKey(`crash-batch-${index}`),
    queue: 'crash-batch',
    input: { index },
  }));

  it('leaves every item admitted whole or not at all, and the same call re-sent completes it: admitted items replay, the rest are admitted once', async () => {
    const client = clientFor(AdmissionService, cluster.replicas.admission[0]!.url, await cluster.tokenFor(subject, 'user'));
    const victim = cluster.replicas.state[0]!;
    const first = settle(client.submitJobs({ items }));
    // Killed once the first of the call's group commits has landed, so some items are decided and some are not.
    await until(async () => (await sql.query('select 1 from idempotency_records where subject = $1 limit 1', [subject])).rowCount === 1, 'a first item to commit', 30_000);
    await victim.kill();
    const answered = await first;
    await victim.restart();

    const acknowledged = new Map<number, SubmitJobResponse>();
    if (answered.ok) {
      for (const [index, result] of answered.value.results.entries()) {
        if (result.result.case === 'submitted') acknowledged.set(index, result.result.value);
        else expect(Code[result.result.value?.code ?? Code.Unknown], `item ${index}`).toBe('Unavailable');
      }
    } else {
      expect(answered.failure.code).toBe(Code.Unavailable);
    }
    expect(acknowledged.size, 'the kill landed while the call was in flight').toBeLessThan(items.length);
    console.info(`SubmitJobs through a killed state process: ${answered.ok ? `${acknowledged.size} items acknowledged, the rest UNAVAILABLE` : 'the call failed UNAVAILABLE'}`);
    const before = await expectAdmissionsWhole(sql, subject);
    expect(before.size).toBeGreaterThanOrEqual(acknowledged.size);

    const again = await client.submitJobs({ items });
    const after = await expectAdmissionsWhole(sql, subject);
    expect(after.size).toBe(items.length);
    for (const [index, result] of again.results.entries()) {
      expect(result.result.case, `item ${index}`).toBe('submitted');
      const response = result.result.value as SubmitJobResponse;
      before.expectRetryAnswer(items[index]!, response, `item ${index}`);
      if (acknowledged.has(index)) expect(sameAdmission(response, acknowledged.get(index)!)).toBe(true);
      after.expectBound(items[index]!, response.job!.id, `item ${index}`);
    }
  }, 90_000);

  it("lets the TS client's submitMany ride out the kill: undecided jobs are sent again with their keys, and every job is admitted exactly once", async () => {
    const owner = 'crash-many-owner';
    const client = createClient({
      admissionUrl: cluster.replicas.admission[0]!.url,
      eventsUrl: cluster.events.url,
      token: await cluster.tokenFor(owner, 'user'),
      // Patient enough for a restart: up to 20 tries, backoff ceilings from 0.5 s to 2 s.
      retry: { tries: 20, initialDelayMs: 500, maxDelayMs: 2_000 },
    });
    try {
      const jobs = Array.from({ length: 2_000 }, (_, index) => ({ queue: 'crash-many', input: { index } }));
      const victim = cluster.replicas.state[0]!;
      const sending = client.submitMany(jobs);
      await until(async () => (await sql.query('select 1 from idempotency_records where subject = $1 limit 1', [owner])).rowCount === 1, 'a first job to commit', 30_000);
      await victim.kill();
      await victim.restart();
      const results = await sending;
      expect(results.filter((result) => !result.ok).map((result) => !result.ok && result.error.message)).toEqual([]);
      const bindings = await expectAdmissionsWhole(sql, owner);
      expect(bindings.size).toBe(jobs.length);
      for (const [index, result] of results.entries()) {
        expect(result.ok && result.job.input, `job ${index}`).toEqual({ index });
        expect(bindings.of(result.idempotencyKey)?.job_id).toBe(result.ok && result.job.id);
      }
    } finally {
      client.close();
    }
  }, 90_000);
});

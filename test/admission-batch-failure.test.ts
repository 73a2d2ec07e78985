import { setTimeout as sleep } from 'node:timers/promises';
import { Code } from '@connectrpc/connect';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AdmissionService, type SubmitJobResponse } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { expectAdmissionsWhole, inParallel, sameAdmission, type SubmitJobInit } from './support/admission-audit.js';
import { clientFor, settle, type Settled } from './support/clients.js';
import { startCluster, type DocketCluster } from './support/cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { startClusterWithSql, stopClustersWithSql } from './support/cluster-with-sql.js';
import { newIdempotencyKey } from './support/keys.js';
import { openSql } from './support/sql.js';

/*
 * A group-committed admission batch whose transaction fails (SPEC section
 * 3; docs/write-path.md, "Each item gets its own answer"). The failures are
 * real database failures, injected from outside the service: a deferred
 * constraint trigger that refuses one job at COMMIT, and backends of the
 * state process terminated while a burst is in flight. What a caller must
 * be able to rely on: a success answer means the job exists (binding, job
 * row, job.admitted, feed entry), a failure answer means nothing of it was
 * acknowledged, and retrying a failed call with the same key always ends
 * in exactly one job for that key.
 */

let cluster: DocketCluster;
let sql: pg.Client;

beforeAll(async () => {
  ({ cluster, sql } = await startClusterWithSql(startCluster, { databaseUrl: await createMigratedTestDatabase('admission batch failure') }));
});

afterEach(async () => {
  await sql.query('drop trigger if exists poison_guard on jobs');
});

afterAll(stopClustersWithSql);

/**
 * Refuses, at COMMIT, every transaction that inserts a job labelled
 * `poison`; counts those refusals in a sequence (sequences are not rolled
 * back, so the count survives the refused transactions).
 */
async function injectPoisonGuard(): Promise<void> {
  await sql.query(`
    create sequence if not exists poisoned_commits;
    create or replace function poison_guard() returns trigger language plpgsql as $$
    begin
      if new.label = 'poison' then
        perform nextval('poisoned_commits');
        raise exception 'a poisoned admission';
      end if;
      return null;
    end $$;
    create constraint trigger poison_guard after insert on jobs
      deferrable initially deferred for each row execute function poison_guard();`);
}

async function poisonedCommits(): Promise<number> {
  const { rows } = await sql.query<{ n: string }>("select case when is_called then last_value else 0 end as n from poisoned_commits");
  return Number(rows[0]!.n);
}

describe('a batch whose transaction fails at COMMIT', () => {
  it('acknowledges none of its items; the poison item alone fails, and retries with the same keys give exactly one job each', async () => {
    const owner = 'poison-owner';
    const token = await cluster.tokenFor(owner, 'user');
    const admission = clientFor(AdmissionService, cluster.admission.url, token);
    await injectPoisonGuard();

    const TOTAL = 240;
    const poisonAt = new Set([60, 61, 100, 150, 151, 152, 200]);
    const requests: SubmitJobInit[] = Array.from({ length: TOTAL }, (_, index) => ({
      idempotencyKey: newIdempotencyKey(`poison-${index}`),
      queue: 'poison-test',
      label: poisonAt.has(index) ? 'poison' : 'fine',
      input: { index },
    }));

    const answers: Settled<SubmitJobResponse>[] = await Promise.all(requests.map((request) => settle(admission.submitJob(request))));

    // The batches holding a poison item failed at COMMIT more often than there are poison items: the
    // items were decided in batches with neighbours, and those batches were refused as a whole.
    expect(await poisonedCommits()).toBeGreaterThan(poisonAt.size);

    // While the failure is in force: every success answer names a job that exists, whole, bound to its
    // own request; no failed item's key has a binding (a failure answer acknowledged nothing).
    const failedAt = answers.flatMap((answer, index) => (answer.ok ? [] : [index]));
    let bindings = await expectAdmissionsWhole(sql, owner);
    for (const [index, answer] of answers.entries()) {
      if (!answer.ok) continue;
      expect(answer.value.replayed).toBe(false);
      bindings.expectBound(requests[index]!, answer.value.job!.id);
    }
    const failedButBound = failedAt.filter((index) => bindings.of(requests[index]!.idempotencyKey!) !== undefined);
    expect({ failed: failedAt.length, failedButBound: failedButBound.length }).toEqual({ failed: failedAt.length, failedButBound: 0 });

    // A failed batch is split in halves, each decided again in its own transaction, down to the item
    // that fails alone: the poison item's neighbours are decided again in smaller transactions and
    // succeed; only the poison items fail (INTERNAL: the database refused them for a reason no check
    // foresaw).
    expect(failedAt.filter((index) => !poisonAt.has(index))).toEqual([]);
    expect(new Set(failedAt)).toEqual(poisonAt);
    for (const index of failedAt) expect((answers[index] as { failure: { code: Code } }).failure.code).toBe(Code.Internal);
    expect(bindings.size).toBe(TOTAL - poisonAt.size);

    // Retrying while the failure is still in force changes nothing.
    const retriedEarly = await Promise.all(failedAt.map((index) => settle(admission.submitJob(requests[index]!))));
    expect(retriedEarly.map((answer) => answer.ok)).toEqual(failedAt.map(() => false));
    expect((await expectAdmissionsWhole(sql, owner)).size).toBe(TOTAL - poisonAt.size);

    // Once the injection is removed, the same calls succeed, once; the earlier successes replay.
    await sql.query('drop trigger poison_guard on jobs');
    const retried = await Promise.all(failedAt.map((index) => admission.submitJob(requests[index]!)));
    expect(retried.map((response) => response.replayed)).toEqual(failedAt.map(() => false));
    const replays = await inParallel(requests, 32, (request) => admission.submitJob(request));
    for (const [index, replay] of replays.entries()) {
      expect(replay.replayed).toBe(true);
      const first = answers[index]!.ok ? (answers[index] as { value: SubmitJobResponse }).value : retried[failedAt.indexOf(index)]!;
      expect(sameAdmission(replay, first)).toBe(true);
    }
    bindings = await expectAdmissionsWhole(sql, owner);
    expect(bindings.size).toBe(TOTAL);
    for (const [index, replay] of replays.entries()) expect(bindings.of(requests[index]!.idempotencyKey!)?.job_id).toBe(replay.job!.id);
  });
});

describe('a batch whose database connection is terminated', () => {
  it('acknowledges only what committed; every failed call retried with its key gives exactly one job', async () => {
    const owner = 'terminated-owner';
    const token = await cluster.tokenFor(owner, 'user');
    const admission = clientFor(AdmissionService, cluster.admission.url, token);
    const TOTAL = 400;
    const requests: SubmitJobInit[] = Array.from({ length: TOTAL }, (_, index) => ({
      idempotencyKey: newIdempotencyKey(`terminated-${index}`),
      queue: 'terminated-test',
      input: { index },
    }));

    // Terminates the state process's pooled connections (not its LISTEN connection) over and over while
    // the burst runs: transactions die at whatever statement they were in, COMMIT included.
    let bursting = true;
    let terminated = 0;
    const killer = (async () => {
      const killerSql = await openSql(cluster.databaseUrl);
      try {
        while (bursting) {
          const { rows } = await killerSql.query<{ n: number }>(
            `select count(*)::int as n from (
               select pg_terminate_backend(pid) from pg_stat_activity
                where application_name = 'docket-state' and datname = current_database() and state <> 'idle') t`,
          );
          terminated += rows[0]!.n;
          // Real time: the pace of the terminations while the bursts run.
          await sleep(15);
        }
      } finally {
        await killerSql.end();
      }
    })();
    let answers: Settled<SubmitJobResponse>[];
    try {
      answers = await inParallel(requests, 64, (request) => settle(admission.submitJob(request)));
    } finally {
      bursting = false;
      await killer;
    }
    expect(terminated).toBeGreaterThan(0);
    const failedAt = answers.flatMap((answer, index) => (answer.ok ? [] : [index]));
    expect(failedAt.length).toBeGreaterThan(0);

    // A lost database connection is an unavailable database for the batch it served, not a crash of
    // the state process: it is still serving, on the same pid, when the burst is over.
    expect({ exitCode: cluster.state.process.exitCode, signal: cluster.state.process.signalCode }).toEqual({ exitCode: null, signal: null });

    // Nothing half-exists: every binding has its whole admission, every job its binding. Every success
    // answer names its bound job. A failed call left either nothing or (its COMMIT landed, the answer
    // was lost) a whole admission.
    const bindings = await expectAdmissionsWhole(sql, owner);
    for (const [index, answer] of answers.entries()) {
      if (answer.ok) expect(bindings.of(requests[index]!.idempotencyKey!)?.job_id).toBe(answer.value.job!.id);
    }

    // Retrying every failed call with its key yields one job each; earlier successes replay unchanged.
    const retried = await Promise.all(failedAt.map((index) => admission.submitJob(requests[index]!)));
    // A binding that existed before the retry is replayed; none means the retry admits it now.
    for (const [position, index] of failedAt.entries()) bindings.expectRetryAnswer(requests[index]!, retried[position]!);
    const replays = await inParallel(requests, 32, (request) => admission.submitJob(request));
    for (const [index, replay] of replays.entries()) {
      expect(replay.replayed).toBe(true);
      const answer = answers[index]!;
      if (answer.ok) expect(sameAdmission(replay, answer.value)).toBe(true);
    }
    expect((await expectAdmissionsWhole(sql, owner)).size).toBe(TOTAL);
    expect(new Set(replays.map((replay) => replay.job!.id)).size).toBe(TOTAL);

    // The failures were retryable refusals (UNAVAILABLE), which gRPC clients retry, never a wrong answer.
    const codes = new Set(failedAt.map((index) => Code[(answers[index] as { failure: { code: Code } }).failure.code]));
    expect([...codes]).toEqual([Code[Code.Unavailable]]);
  });
});

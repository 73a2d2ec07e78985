import { Code, ConnectError } from '@connectrpc/connect';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GENESIS_HASH, delay, retryBackoffMs, verifyChainSegment, type JsonValue } from '@docket/contracts';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { admissionLedger, keyHashOf, unboundJobs } from '../support/admission-audit.js';
import { clientFor } from '../support/clients.js';
import { startCluster, stopAll, type DocketCluster } from '../support/cluster.js';
import { newIdempotencyKey } from '../support/keys.js';
import { failoverStackInstalled, startPatroniCluster, type PatroniCluster } from '../support/patroni-cluster.js';
import { newOperationId } from '../support/raw-worker.js';

/*
 * A PostgreSQL failover under load loses no acknowledged write (issue 37).
 * Docket's state service reaches PostgreSQL only through HAProxy, which
 * sends its port to whichever of two Patroni-managed PostgreSQL 15 servers
 * Patroni's REST API names primary; `synchronous_mode: true` makes the
 * standby synchronous, so a commit is acknowledged only once both have it.
 * Eight submitters (SubmitJob, each key retried with the same request on
 * a retryable failure) and four claim + complete loops (ClaimJobs and
 * ReportOutcome, each retried with its operation id) keep a ledger of
 * every acknowledged call. Six seconds in, the leader's Patroni and its
 * PostgreSQL are killed (-9); Patroni promotes the standby once the
 * leader's key expires (ttl 10 s). The load runs on for 25 s.
 *
 * Afterwards, on the promoted server: every acknowledged submission is
 * there as the job it was acknowledged as; every key has exactly one job
 * (its binding, the job, its admission first in its journal); every acknowledged outcome stands; every
 * journal verifies from genesis to the job row's head; no job has two
 * attempts that overlap in time; no Docket service restarted; and while
 * the leader was gone callers saw only UNAVAILABLE and DEADLINE_EXCEEDED
 * (retryable), never INTERNAL or UNKNOWN. The recovery time (kill to the
 * first acknowledged SubmitJob after it) is printed.
 */

const SUBMITTERS = 8;
const WORK_LOOPS = 4;
const KILL_AFTER_MS = 6_000;
const RUN_AFTER_KILL_MS = 25_000;
const OWNER = 'failover-owner';
const QUEUE = 'failover';

let patroni: PatroniCluster | undefined;
let cluster: DocketCluster;
let databaseUrl: string;

beforeAll(async () => {
  patroni = await startPatroniCluster({ synchronous: true });
  databaseUrl = await patroni.createDatabase('docket');
  cluster = await startCluster({ databaseUrl, env: { state: { DOCKET_STATE_CALL_TIMEOUT_MS: '5000' } } });
}, 180_000);

afterAll(async () => {
  await stopAll();
  await patroni?.stop();
});

/** What the callers saw: acknowledged calls, and every failed try by code. */
interface Ledger {
  readonly submitted: Map<string, string>;
  readonly completed: Set<string>;
  readonly failures: Map<string, number>;
  /** ms after the start of the first acknowledged SubmitJob sent after the kill. */
  firstSubmitAfterKillMs: number | undefined;
}

/** Runs `call` until it succeeds, retrying (same request) what a failover may cause; undefined if `until` passes first. */
async function retried<T>(ledger: Ledger, call: () => Promise<T>, until: number): Promise<T | undefined> {
  for (let tryNumber = 1; ; tryNumber++) {
    try {
      return await call();
    } catch (error) {
      const code = ConnectError.from(error).code;
      ledger.failures.set(Code[code], (ledger.failures.get(Code[code]) ?? 0) + 1);
      if (code !== Code.Unavailable && code !== Code.DeadlineExceeded) throw error;
      if (performance.now() > until) return undefined;
      await delay(retryBackoffMs(tryNumber, 50, 1_000));
    }
  }
}

const failoverTest = failoverStackInstalled() ? it : it.skip;

describe('a Patroni failover of PostgreSQL under load (synchronous standby)', () => {
  failoverTest('loses no acknowledged submission or outcome, keeps one job per key and every chain, and restarts no service', async () => {
    const ownerToken = await cluster.tokenFor(OWNER, 'user');
    const admission = clientFor(AdmissionService, cluster.admission.url, ownerToken);
    const execution = clientFor(ExecutionService, cluster.execution.url, await cluster.tokenFor('failover-worker', 'worker'));
    const pids = Object.fromEntries((['state', 'admission', 'execution', 'events'] as const).map((name) => [name, cluster[name].process.pid]));
    const ledger: Ledger = { submitted: new Map(), completed: new Set(), failures: new Map(), firstSubmitAfterKillMs: undefined };
    const started = performance.now();
    let killedAt: number | undefined;
    const endAt = started + KILL_AFTER_MS + RUN_AFTER_KILL_MS;
    const giveUpAt = endAt + 20_000;

    const submitter = async (index: number): Promise<void> => {
      for (let n = 0; performance.now() < endAt; n++) {
        const key = newIdempotencyKey(`fo-${index}-${n}`);
        const sentAt = performance.now();
        const answer = await retried(ledger, () => admission.submitJob({ idempotencyKey: key, queue: QUEUE, input: { index, n } }, { timeoutMs: 5_000 }), giveUpAt);
        if (!answer?.job) continue;
        ledger.submitted.set(key, answer.job.id);
        if (killedAt !== undefined && sentAt > killedAt && ledger.firstSubmitAfterKillMs === undefined) ledger.firstSubmitAfterKillMs = performance.now() - killedAt;
      }
    };
    const { workerIncarnation } = await execution.registerWorker({ workerName: 'failover', queues: [QUEUE], maxConcurrency: WORK_LOOPS });
    const worker = async (): Promise<void> => {
      while (performance.now() < endAt) {
        const claim = { workerIncarnation, queues: [QUEUE], maxJobs: 1, wait: { seconds: 1n }, operationId: newOperationId() };
        const claimed = await retried(ledger, () => execution.claimJobs(claim, { timeoutMs: 5_000 }), giveUpAt);
        for (const { authority, envelope } of claimed?.assignments ?? []) {
          const report = {
            attempt: { attemptId: authority!.attemptId, fence: authority!.fence, workerIncarnation: authority!.workerIncarnation },
            operationId: newOperationId(),
            outcome: { case: 'success' as const, value: { result: { done: true } } },
          };
          const reported = await retried(ledger, () => execution.reportOutcome(report, { timeoutMs: 5_000 }), giveUpAt);
          if (reported) ledger.completed.add(envelope!.jobId);
        }
      }
    };
    const killer = async (): Promise<void> => {
      await delay(KILL_AFTER_MS);
      const leader = await patroni!.leader();
      expect(leader, 'a Patroni leader before the kill').toBeDefined();
      killedAt = performance.now();
      await patroni!.kill(leader!);
    };
    await Promise.all([killer(), ...Array.from({ length: SUBMITTERS }, (_, index) => submitter(index)), ...Array.from({ length: WORK_LOOPS }, () => worker())]);

    const recoveryMs = ledger.firstSubmitAfterKillMs;
    console.log(
      `failover: ${ledger.submitted.size} submissions and ${ledger.completed.size} outcomes acknowledged; recovery ${recoveryMs === undefined ? 'none' : `${(recoveryMs / 1000).toFixed(1)} s`}; failed tries ${JSON.stringify(Object.fromEntries(ledger.failures))}`,
    );
    expect(recoveryMs, 'a SubmitJob sent after the kill was acknowledged').toBeDefined();
    expect([...ledger.failures.keys()].filter((code) => code !== 'Unavailable' && code !== 'DeadlineExceeded')).toEqual([]);

    const sql = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    try {
      // Every acknowledged submission is there, as the job it was acknowledged as.
      const ids = [...ledger.submitted.values()];
      const { rows: present } = await sql.query<{ id: string; status: string }>('select id, status from jobs where id = any($1)', [ids]);
      expect(new Set(present.map((row) => row.id)).size).toBe(new Set(ids).size);
      // One job per key: every binding names a job of its digest whose journal starts with its admission,
      // no job lacks a binding, no two bindings share a job; and each acknowledged key is bound to its job.
      const bindings = await admissionLedger(sql, OWNER);
      expect(bindings.filter((row) => !row.job_exists || row.job_digest !== row.request_digest || row.event_types[0] !== 'job.admitted')).toEqual([]);
      expect(await unboundJobs(sql, OWNER)).toEqual([]);
      expect(new Set(bindings.map((row) => row.job_id)).size).toBe(bindings.length);
      const boundJob = new Map(bindings.map((row) => [row.key_hash, row.job_id]));
      expect([...ledger.submitted].filter(([key, jobId]) => boundJob.get(keyHashOf(key)) !== jobId)).toEqual([]);
      // Every acknowledged outcome stands.
      const status = new Map(present.map((row) => [row.id, row.status]));
      expect([...ledger.completed].filter((jobId) => status.get(jobId) !== 'SUCCEEDED')).toEqual([]);
      // Every journal verifies from genesis to its job row's head.
      const { rows: jobs } = await sql.query<{ id: string; request_digest: string; head_hash: string; event_count: string }>(
        'select id, request_digest, head_hash, event_count from jobs where owner = $1',
        [OWNER],
      );
      const { rows: events } = await sql.query<{ job_id: string; sequence: string; type: string; payload: { [k: string]: JsonValue }; occurred_at: Date; previous_hash: string; hash: string }>(
        'select e.job_id, e.sequence, e.type, e.payload, e.occurred_at, e.previous_hash, e.hash from job_events e join jobs j on j.id = e.job_id where j.owner = $1 order by e.job_id, e.sequence',
        [OWNER],
      );
      const byJob = new Map<string, typeof events>();
      for (const event of events) byJob.set(event.job_id, [...(byJob.get(event.job_id) ?? []), event]);
      const broken = jobs.filter((job) => {
        const verdict = verifyChainSegment(
          (byJob.get(job.id) ?? []).map((event) => ({ jobId: event.job_id, requestDigest: job.request_digest, sequence: BigInt(event.sequence), previousHash: event.previous_hash, type: event.type, payload: event.payload, occurredAt: event.occurred_at, hash: event.hash })),
          { jobId: job.id, requestDigest: job.request_digest, previousHash: GENESIS_HASH, previousSequence: 0 },
        );
        return !verdict.ok || verdict.headHash !== job.head_hash || verdict.lastSequence !== BigInt(job.event_count);
      });
      expect(broken.map((job) => job.id)).toEqual([]);
      // No two attempts of a job overlap in time.
      const { rows: overlapping } = await sql.query(
        `select a.job_id from attempts a join attempts b on b.job_id = a.job_id and b.id > a.id
           where a.started_at < coalesce(b.ended_at, 'infinity') and b.started_at < coalesce(a.ended_at, 'infinity') limit 5`,
      );
      expect(overlapping).toEqual([]);
    } finally {
      await sql.end();
    }
    // No service restarted: the same processes, none exited.
    for (const name of ['state', 'admission', 'execution', 'events'] as const) {
      expect(cluster[name].process.pid, `${name} kept its process`).toBe(pids[name]);
      expect(cluster[name].process.exitCode, `${name} did not exit`).toBeNull();
    }
  }, 240_000);
});

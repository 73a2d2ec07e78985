import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Code, ConnectError } from '@connectrpc/connect';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { delay, retryBackoffMs } from '@docket/contracts';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { Health, HealthCheckResponse_ServingStatus } from '@docket/proto/grpc/health/v1/health_pb.js';
import { clientFor, failureOf, seenByConnect } from '../support/clients.js';
import { REPO_ROOT, startCluster, stopAll, type DocketCluster } from '../support/cluster.js';
import { newIdempotencyKey } from '../support/keys.js';
import { failoverStackInstalled, startPatroniCluster, type PatroniCluster } from '../support/patroni-cluster.js';
import { until } from '../support/polling.js';

/*
 * An asynchronous failover that drops acknowledged writes is detected, not
 * silent (issue 37). Patroni runs with `synchronous_mode: false`. Four
 * submitters keep a ledger of every acknowledged SubmitJob. Two seconds
 * in, the leader's WAL senders are stopped (SIGSTOP), so the standby
 * receives nothing more while the leader goes on acknowledging; four
 * seconds later the leader is killed (-9) and Patroni promotes the lagging
 * standby once the leader key expires (`maximum_lag_on_failover` is 1 GiB,
 * so it may).
 *
 * Then: the state service reports NOT_SERVING; a SubmitJob is refused with
 * UNAVAILABLE, reason DATABASE_ROLLED_BACK; the database takes no job while
 * it refuses (its job count stays put), and no submission acknowledged
 * after the kill is on the new timeline; `docket admin accept-rollback
 * --dry-run` reports and changes nothing; `docket admin accept-rollback`
 * reports every job the ledger knows was acknowledged and is gone (there
 * must be some), after which state serves again, a SubmitJob is admitted,
 * and the watermark file records the new timeline.
 */

const SUBMITTERS = 4;
const HOLD_AFTER_MS = 2_000;
const KILL_AFTER_HOLD_MS = 4_000;
const OWNER = 'async-failover-owner';
const QUEUE = 'async-failover';

const run = promisify(execFile);

let patroni: PatroniCluster | undefined;
let cluster: DocketCluster;
let databaseUrl: string;
let dir: string;

beforeAll(async () => {
  if (!failoverStackInstalled()) return;
  dir = await mkdtemp(join(tmpdir(), 'docket-async-failover-'));
  patroni = await startPatroniCluster({ synchronous: false });
  databaseUrl = await patroni.createDatabase('docket');
  cluster = await startCluster({ databaseUrl, env: { state: { DOCKET_STATE_WATERMARK_FILE: join(dir, 'state-watermark.json') } } });
}, 180_000);

afterAll(async () => {
  await stopAll();
  await patroni?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** One acknowledged submission: when it was sent and answered (performance.now()). */
interface Acknowledged {
  readonly jobId: string;
  readonly sentAt: number;
  readonly ackAt: number;
}

/** `docket admin accept-rollback` as an operator runs it, against this cluster's state service. */
async function acceptRollback(...flags: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [join(REPO_ROOT, 'packages/cli/dist/main.js'), 'admin', 'accept-rollback', '--state-url', cluster.state.url, ...flags], {
    cwd: dir,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', DOCKET_SERVICE_AUTH_SECRET: cluster.serviceAuthSecret },
    timeout: 30_000,
  });
  return stdout;
}

const failoverTest = failoverStackInstalled() ? it : it.skip;

describe('an asynchronous Patroni failover that loses acknowledged writes', () => {
  failoverTest('is detected: state refuses with DATABASE_ROLLED_BACK, takes nothing on the new timeline, reports every lost job, and serves again once accepted', async () => {
    const admission = clientFor(AdmissionService, cluster.admission.url, await cluster.tokenFor(OWNER, 'user'));
    const health = clientFor(Health, cluster.state.url);
    const servingStatus = async (): Promise<HealthCheckResponse_ServingStatus | undefined> => {
      try {
        return (await health.check({ service: '' }, { timeoutMs: 1_000 })).status;
      } catch (error) {
        if (ConnectError.from(error).code === Code.Unavailable || ConnectError.from(error).code === Code.DeadlineExceeded) return undefined;
        throw error;
      }
    };
    const acknowledged: Acknowledged[] = [];
    const failures = new Map<string, number>();
    let stopped = false;
    const submitter = async (index: number): Promise<void> => {
      for (let n = 0; !stopped; n++) {
        const key = newIdempotencyKey(`afo-${index}-${n}`);
        const sentAt = performance.now();
        for (let tryNumber = 1; !stopped; tryNumber++) {
          try {
            const answer = await admission.submitJob({ idempotencyKey: key, queue: QUEUE, input: { index, n } }, { timeoutMs: 5_000 });
            acknowledged.push({ jobId: answer.job!.id, sentAt, ackAt: performance.now() });
            break;
          } catch (error) {
            // Every failure is counted; the test asserts at the end that all were retryable.
            const seen = seenByConnect(ConnectError.from(error));
            const name = `${Code[seen.code]}${seen.reason ? `/${seen.reason}` : ''}`;
            failures.set(name, (failures.get(name) ?? 0) + 1);
            if (seen.code !== Code.Unavailable && seen.code !== Code.DeadlineExceeded) return;
            await delay(retryBackoffMs(tryNumber, 50, 500));
          }
        }
      }
    };
    const submitters = Promise.all(Array.from({ length: SUBMITTERS }, (_, index) => submitter(index)));
    try {
      await delay(HOLD_AFTER_MS);
      expect(await patroni!.holdReplication(), 'the leader had a WAL sender to stop').toBeGreaterThan(0);
      await delay(KILL_AFTER_HOLD_MS);
      const leader = await patroni!.leader();
      expect(leader, 'a Patroni leader before the kill').toBeDefined();
      const killedAt = performance.now();
      await patroni!.kill(leader!);

      await until(async () => (await servingStatus()) === HealthCheckResponse_ServingStatus.NOT_SERVING && (await patroni!.leader()) !== undefined, 'state to report NOT_SERVING on the promoted standby', 90_000, 250);
      await until(async () => {
        try {
          await admission.submitJob({ idempotencyKey: newIdempotencyKey('afo-probe'), queue: QUEUE, input: {} }, { timeoutMs: 5_000 });
        } catch (error) {
          return seenByConnect(ConnectError.from(error)).reason === 'DATABASE_ROLLED_BACK';
        }
        throw new Error('a SubmitJob was admitted on the new timeline before the rollback was accepted');
      }, 'a refusal with DATABASE_ROLLED_BACK', 30_000, 250);
      const refused = await failureOf(admission.submitJob({ idempotencyKey: newIdempotencyKey('afo-refused'), queue: QUEUE, input: {} }, { timeoutMs: 5_000 }));
      expect(refused).toMatchObject({ code: Code.Unavailable, reason: 'DATABASE_ROLLED_BACK', domain: 'docket' });

      const sql = new pg.Pool({ connectionString: databaseUrl, max: 2 });
      try {
        const jobCount = async (): Promise<number> => Number((await sql.query<{ n: string }>('select count(*) as n from jobs')).rows[0]!.n);
        const countAtDetection = await jobCount();
        await delay(3_000);
        expect(await jobCount(), 'no job was written while state refused').toBe(countAtDetection);
        stopped = true;
        await submitters;

        const ids = acknowledged.map((ack) => ack.jobId);
        const present = new Set((await sql.query<{ id: string }>('select id from jobs where id = any($1)', [ids])).rows.map((row) => row.id));
        const lost = ids.filter((id) => !present.has(id));
        console.log(
          `async failover: ${ids.length} submissions acknowledged, ${lost.length} lost; failed tries ${JSON.stringify(Object.fromEntries(failures))}`,
        );
        expect([...failures.keys()].filter((name) => !name.startsWith('Unavailable') && !name.startsWith('DeadlineExceeded')), 'callers saw only retryable failures').toEqual([]);
        expect(lost.length, 'the lagging standby lost acknowledged submissions (else the test proves nothing)').toBeGreaterThan(0);
        // Anything acknowledged after the kill came from the old primary's last moments: none of it is on the new timeline.
        expect(acknowledged.filter((ack) => ack.ackAt > killedAt && present.has(ack.jobId))).toEqual([]);

        const dryRun = await acceptRollback('--dry-run');
        expect(dryRun).toContain('not accepted (--dry-run)');
        expect(await servingStatus()).toBe(HealthCheckResponse_ServingStatus.NOT_SERVING);
        expect(await jobCount()).toBe(countAtDetection);

        const report = await acceptRollback();
        const reported = new Set([...report.matchAll(/^ {2}lost (\S+)$/gm)].map((match) => match[1]));
        expect(report).toMatch(/rolled back \(timeline\): timeline 1 -> 2/);
        expect(report).toContain('accepted: serving again');
        expect(lost.filter((id) => !reported.has(id)), 'every lost job the ledger knows is in the report').toEqual([]);
        // The report names only jobs that are really gone.
        expect([...reported].filter((id) => present.has(id!))).toEqual([]);

        await until(async () => (await servingStatus()) === HealthCheckResponse_ServingStatus.SERVING, 'state to serve again', 20_000, 250);
        let admitted: string | undefined;
        await until(async () => {
          try {
            admitted = (await admission.submitJob({ idempotencyKey: newIdempotencyKey('afo-after'), queue: QUEUE, input: {} }, { timeoutMs: 5_000 })).job!.id;
            return true;
          } catch (error) {
            if (ConnectError.from(error).code !== Code.Unavailable) throw error;
            return false;
          }
        }, 'a SubmitJob to be admitted after the rollback was accepted', 20_000, 250);
        expect((await sql.query('select 1 from jobs where id = $1', [admitted])).rowCount).toBe(1);
      } finally {
        await sql.end();
      }
      const saved = JSON.parse(await readFile(join(dir, 'state-watermark.json'), 'utf8')) as { timeline: number };
      expect(saved.timeline, 'the watermark file follows the accepted timeline').toBe(2);
    } finally {
      stopped = true;
      await submitters;
    }
  }, 240_000);
});

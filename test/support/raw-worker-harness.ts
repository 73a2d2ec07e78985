import { randomBytes } from 'node:crypto';
import { create, type JsonObject, type MessageInitShape } from '@bufbuild/protobuf';
import type { Duration, Timestamp } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import pg from 'pg';
import { AdmissionService, SubmitJobRequestSchema, type SubmitJobRequest } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { LostAttemptPolicy, RetryPolicySchema } from '@docket/proto/docket/common/v1/retry_policy_pb.js';
import type { Event } from '@docket/proto/docket/common/v1/event_pb.js';
import type { Job, OnParentFailure } from '@docket/proto/docket/common/v1/job_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { clientFor } from './clients.js';
import type { ClusterShape, DocketServices } from './docket-services.js';
import { readWholeJournal } from './job-writer.js';
import { newIdempotencyKey } from './keys.js';
import { RawWorker, attemptOf, newOperationId } from './raw-worker.js';

/** A job row as the execution tests read it. */
export interface JobRow {
  readonly id: string;
  readonly status: string;
  readonly revision: string;
  readonly fence: string;
  readonly attempt_count: number;
  readonly current_attempt_id: string | null;
  readonly current_worker_incarnation: string | null;
  readonly lease_expires_at: Date | null;
  readonly cancel_requested: boolean;
  readonly pause_requested: boolean;
  readonly not_before: Date | null;
  readonly progress: unknown;
  readonly checkpoint: unknown;
  readonly result: unknown;
  readonly failure: { failure_class?: string; retryable?: boolean } | null;
  readonly event_count: string;
}

/** An attempt row. */
export interface AttemptRow {
  readonly id: string;
  readonly job_id: string;
  readonly attempt_number: number;
  readonly fence: string;
  readonly worker_incarnation: string;
  readonly queue: string;
  readonly status: string;
  readonly started_at: Date;
  readonly ended_at: Date | null;
}

/** A SubmitJob request as a test writes it: a queue, the rest optional (the key defaults to a fresh one). */
export interface SubmitInit {
  readonly queue: string;
  readonly idempotencyKey?: string;
  readonly input?: JsonObject;
  readonly label?: string;
  readonly priority?: number;
  readonly runAfter?: Timestamp;
  readonly retryPolicy?: MessageInitShape<typeof RetryPolicySchema>;
  readonly lostAttemptPolicy?: LostAttemptPolicy;
  readonly uniqueWhileActive?: { readonly key: string };
  readonly attemptTimeout?: Duration;
  readonly heartbeatTimeout?: Duration;
  readonly concurrencyKey?: string;
  readonly dependsOn?: string[];
  readonly onParentFailure?: OnParentFailure;
}

/** A fresh queue name, so tests in one database never claim each other's jobs. */
export function freshQueue(label: string): string {
  return `${label}-${randomBytes(5).toString('hex')}`;
}

/**
 * The environment of a cluster whose tests wait for lost attempts and due
 * retries: attempts leased for `leaseMs`, and the execution service's reaper
 * and retry sweeps every 100 ms rather than at their production intervals,
 * so a test sees an expired lease or an ended backoff acted on within a
 * tenth of a second.
 */
export function quickSweepsEnv(leaseMs: number): NonNullable<ClusterShape['env']> {
  return { state: { DOCKET_LEASE_MS: String(leaseMs) }, execution: { DOCKET_REAPER_INTERVAL_MS: '100', DOCKET_RETRY_INTERVAL_MS: '100' } };
}

/**
 * What the execution tests share: a cluster, one job owner, direct SQL
 * connections for what the API does not show (attempts, leases), and raw
 * worker processes, all closed by {@link close} (the cluster too, when the
 * harness started it: {@link start}).
 */
export class ExecutionHarness<Cluster extends DocketServices = DocketServices> {
  readonly #workers = new Set<RawWorker>();
  /** The cluster {@link start} started for this harness, stopped by {@link close}. */
  #ownCluster: Cluster | undefined;

  private constructor(
    readonly cluster: Cluster,
    readonly sql: pg.Pool,
    readonly owner: string,
    readonly ownerToken: string,
    readonly workerToken: string,
    readonly admission: Client<typeof AdmissionService>,
  ) {}

  /** Opens the harness on a running cluster; jobs belong to `owner`, workers authenticate as `worker-<owner>`. */
  static async open<Cluster extends DocketServices>(cluster: Cluster, owner = 'execution-owner'): Promise<ExecutionHarness<Cluster>> {
    const ownerToken = await cluster.tokenFor(owner, 'user');
    const workerToken = await cluster.tokenFor(`worker-${owner}`, 'worker');
    const sql = new pg.Pool({ connectionString: cluster.databaseUrl, max: 4 });
    return new ExecutionHarness(cluster, sql, owner, ownerToken, workerToken, clientFor(AdmissionService, cluster.admission.url, ownerToken));
  }

  /**
   * A test file's own cluster with the harness on it: starts the four
   * services with `start` (`startInProcessCluster`, or `startCluster` for
   * processes) as `shape` says (database, replicas, environment), then opens
   * the harness for `owner` (see {@link open}). {@link close} stops the
   * cluster after the harness's workers and connections; if the harness
   * cannot be opened, the cluster is stopped before the error is thrown.
   */
  static async start<Shape extends ClusterShape, Cluster extends DocketServices>(
    start: (shape: Shape) => Promise<Cluster>,
    owner: string,
    shape: Shape,
  ): Promise<ExecutionHarness<Cluster>> {
    const cluster = await start(shape);
    try {
      const harness = await ExecutionHarness.open(cluster, owner);
      harness.#ownCluster = cluster;
      return harness;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  /** The SubmitJob request for `init`: a fresh key unless one is given, an empty input unless one is given. */
  submitRequest(init: SubmitInit): SubmitJobRequest {
    return create(SubmitJobRequestSchema, { idempotencyKey: newIdempotencyKey('exec'), input: {}, ...init });
  }

  /** Submits a job through admission and returns it as admitted. */
  async submit(init: SubmitInit): Promise<Job> {
    const { job } = await this.admission.submitJob(this.submitRequest(init));
    if (!job) throw new Error('SubmitJob answered without a job');
    return job;
  }

  /** A raw worker process connected to execution replica `replica` (default 0). */
  async worker(replica = 0): Promise<RawWorker> {
    const execution = this.cluster.replicas.execution[replica];
    if (!execution) throw new Error(`no execution replica ${replica}`);
    const worker = await RawWorker.start(execution.url, this.workerToken);
    this.#workers.add(worker);
    return worker;
  }

  /** A Connect client of execution replica `replica` (default 0) that calls as the harness's worker from the test's own process (a raw worker is a process of its own). */
  executionClient(replica = 0): Client<typeof ExecutionService> {
    const execution = this.cluster.replicas.execution[replica];
    if (!execution) throw new Error(`no execution replica ${replica}`);
    return clientFor(ExecutionService, execution.url, this.workerToken);
  }

  /**
   * A raw worker registered as `<label>-<queue>` on a fresh queue of its
   * own (see {@link freshQueue}), serving up to `maxConcurrency` jobs.
   */
  async workerOnFreshQueue(label: string, maxConcurrency = 1): Promise<{ worker: RawWorker; queue: string }> {
    const queue = freshQueue(label);
    const worker = await this.worker();
    await worker.register(`${label}-${queue}`, [queue], maxConcurrency);
    return { worker, queue };
  }

  /**
   * A job that waits on an approval: submitted to a fresh queue, claimed by
   * a worker of its own (see {@link workerOnFreshQueue}), whose attempt
   * asked RequestApproval with `prompt` and so ended; the job is PAUSED
   * until the approval is decided.
   */
  async jobAwaitingApproval(label: string, prompt: string): Promise<{ jobId: string; approvalId: string }> {
    const { worker, queue } = await this.workerOnFreshQueue(label);
    const job = await this.submit({ queue });
    const [assignment] = await worker.claim({ waitMs: 3_000 });
    if (assignment === undefined) throw new Error(`no worker of ${queue} claimed ${job.id}`);
    const { approvalId } = await worker.expectOk('requestApproval', { attempt: attemptOf(assignment), operationId: newOperationId(), prompt });
    return { jobId: job.id, approvalId };
  }

  /** The job's row. */
  async jobRow(jobId: string): Promise<JobRow> {
    const { rows } = await this.sql.query<JobRow>('select * from jobs where id = $1', [jobId]);
    if (!rows[0]) throw new Error(`no job ${jobId}`);
    return rows[0];
  }

  /** The job's attempts, in order. */
  async attempts(jobId: string): Promise<AttemptRow[]> {
    const { rows } = await this.sql.query<AttemptRow>('select * from attempts where job_id = $1 order by attempt_number', [jobId]);
    return rows;
  }

  /** Everything stored about a job that a refused call must leave as it was: its row, attempts and journal rows. */
  async footprint(jobId: string): Promise<unknown> {
    const events = await this.sql.query('select * from job_events where job_id = $1 order by sequence', [jobId]);
    return { job: await this.jobRow(jobId), attempts: await this.attempts(jobId), events: events.rows };
  }

  /** The job's whole journal through the events service, which verifies every hash link it returns. */
  journal(jobId: string): Promise<Event[]> {
    return readWholeJournal(this.cluster.events.url, this.ownerToken, jobId);
  }

  /** The types of the job's verified journal, in order. */
  async eventTypes(jobId: string): Promise<string[]> {
    return (await this.journal(jobId)).map((event) => event.type);
  }

  /** Polls the job row until its status is `status`; returns the row. */
  async waitForStatus(jobId: string, status: string, timeoutMs = 10_000): Promise<JobRow> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const row = await this.jobRow(jobId);
      if (row.status === status) return row;
      if (performance.now() > deadline) throw new Error(`job ${jobId} is ${row.status}, not ${status}, after ${timeoutMs} ms`);
      // Real time: the poll interval of this wait.
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Sets a queue's deployment-wide concurrency limit (SetQueuePolicy, as an admin). */
  async limitQueue(queue: string, maxConcurrency: number): Promise<void> {
    await (await this.queueAdmin()).setQueuePolicy({ queue, maxConcurrency });
  }

  /** An admission client with an admin token, for queue administration. */
  async queueAdmin(): Promise<Client<typeof AdmissionService>> {
    return clientFor(AdmissionService, this.cluster.admission.url, await this.cluster.tokenFor('queue-admin', 'admin'));
  }

  /** Ends every raw worker and the SQL connection, then stops the cluster if {@link start} started it. */
  async close(): Promise<void> {
    await Promise.all([...this.#workers].map((worker) => worker.close()));
    await this.sql.end();
    await this.#ownCluster?.stop();
  }
}

import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ExecutionService,
  WorkRequestSchema,
  WorkResponseSchema,
  type WorkRequest,
  type WorkResponse,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { createRegistry, fromBinary, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { clientFor, type Protocol } from './support/clients.js';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { attemptOf, newOperationId } from './support/raw-worker.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';

/*
 * ExecutionService/Work, the worker session, on the wire (proto comment of
 * Work; docs/execution.md "The worker session"): calls on one stream,
 * answered by call id as they finish, each with the unary RPC's response
 * or its error; cancelling a call; the stream's own errors; a zombie
 * session after its lease; a session driven by @grpc/grpc-js, the reference
 * gRPC implementation; the worker calls over Connect and gRPC-Web, which
 * get decoded what gRPC gets as the state service's bytes; and how a
 * session ends (drain, longest age).
 * The SDK's use of it is covered by worker-sdk*.test.ts, which run on it
 * by default.
 */

const LEASE_MS = 2_000;

let harness: ExecutionHarness;
let execution: Client<typeof ExecutionService>;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'work-session-owner', {
    databaseUrl: await createMigratedTestDatabase('work session'),
    env: { state: { DOCKET_LEASE_MS: String(LEASE_MS) }, execution: { DOCKET_REAPER_INTERVAL_MS: '200' } },
  });
  execution = harness.executionClient();
});

afterAll(() => harness?.close());

type WorkCall = MessageInitShape<typeof WorkRequestSchema>['call'];

/** A Work stream driven by hand: send calls, await their answers by call id, see how the stream ended. */
class RawSession {
  readonly #queue: WorkRequest[] = [];
  #wake: (() => void) | undefined;
  #closed = false;
  readonly #answers = new Map<bigint, WorkResponse>();
  readonly #waiting = new Map<bigint, (answer: WorkResponse) => void>();
  /** In answer order. */
  readonly order: bigint[] = [];
  /** Resolves with the stream's end: OK, or its error. */
  readonly ended: Promise<ConnectError | 'ok'>;

  constructor(client: Client<typeof ExecutionService>) {
    const requests = async function* (this: RawSession): AsyncGenerator<WorkRequest> {
      for (;;) {
        while (this.#queue.length > 0) yield this.#queue.shift()!;
        if (this.#closed) return;
        await new Promise<void>((resolve) => (this.#wake = resolve));
      }
    }.call(this);
    this.ended = (async () => {
      try {
        for await (const answer of client.work(requests)) {
          this.order.push(answer.callId);
          const waiting = this.#waiting.get(answer.callId);
          if (waiting) waiting(answer);
          else this.#answers.set(answer.callId, answer);
        }
        return 'ok' as const;
      } catch (error) {
        return ConnectError.from(error);
      }
    })();
  }

  send(callId: bigint, call: WorkCall, timeoutMs?: number): void {
    this.#queue.push(create(WorkRequestSchema, { callId, call, ...(timeoutMs === undefined ? {} : { timeout: durationFromMs(timeoutMs) }) }));
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  answer(callId: bigint): Promise<WorkResponse> {
    const answered = this.#answers.get(callId);
    if (answered) return Promise.resolve(answered);
    return new Promise((resolve) => this.#waiting.set(callId, resolve));
  }

  async call(callId: bigint, call: WorkCall, timeoutMs?: number): Promise<WorkResponse> {
    this.send(callId, call, timeoutMs);
    return this.answer(callId);
  }

  /** Half-closes the stream. */
  close(): void {
    this.#closed = true;
    this.#wake?.();
  }
}

const registry = createRegistry(ErrorInfoSchema);

/** The ErrorInfo reason of an error answer. */
function reasonOf(answer: WorkResponse): string | undefined {
  if (answer.result.case !== 'error') return undefined;
  for (const detail of answer.result.value.details) {
    const info = anyUnpack(detail, registry);
    if (info && '$typeName' in info && info.$typeName === 'google.rpc.ErrorInfo') return (info as unknown as { reason: string }).reason;
  }
  return undefined;
}

async function register(name: string, queue: string): Promise<string> {
  return (await execution.registerWorker({ workerName: name, queues: [queue], maxConcurrency: 10 })).workerIncarnation;
}

function claim(incarnation: string, queue: string, waitMs: number): WorkCall {
  return { case: 'claimJobs', value: { workerIncarnation: incarnation, queues: [queue], maxJobs: 1, wait: durationFromMs(waitMs), operationId: newOperationId() } };
}

describe('the worker session (ExecutionService/Work)', () => {
  it('answers each call by its id as it finishes: reports go on while a claim waits, and the claim is answered when a job arrives', async () => {
    const queue = freshQueue('session-order');
    const incarnation = await register('session-order', queue);
    const first = await harness.submit({ queue, input: { n: 1 } });
    const session = new RawSession(execution);

    const claimed = await session.call(1n, claim(incarnation, queue, 5_000));
    expect(claimed.result.case).toBe('claimJobs');
    const assignment = claimed.result.case === 'claimJobs' ? claimed.result.value.assignments[0]! : undefined;
    expect(assignment?.envelope?.jobId).toBe(first.id);
    const attempt = attemptOf(assignment!);

    session.send(2n, claim(incarnation, queue, 10_000)); // the queue is empty now: this claim waits
    const renewed = await session.call(3n, { case: 'renewAttempt', value: { attempt, operationId: newOperationId() } });
    expect(renewed.result.case).toBe('renewAttempt');
    const outcome = { attempt, operationId: newOperationId(), outcome: { case: 'success' as const, value: { result: { ok: true } } } };
    const reported = await session.call(4n, { case: 'reportOutcome', value: outcome });
    expect(reported.result.case).toBe('reportOutcome');
    expect(session.order).toEqual([1n, 3n, 4n]); // the waiting claim held nothing up

    const second = await harness.submit({ queue, input: { n: 2 } });
    const pushed = await session.answer(2n);
    expect(pushed.result.case === 'claimJobs' && pushed.result.value.assignments.map((a) => a.envelope?.jobId)).toEqual([second.id]);

    // The same outcome again (same operation id) is the unary RPC's replay: the first answer, nothing applied twice.
    const replayed = await session.call(5n, { case: 'reportOutcome', value: outcome });
    expect(replayed.result).toEqual(reported.result);
    session.close();
    expect(await session.ended).toBe('ok');

    expect((await harness.jobRow(first.id)).status).toBe('SUCCEEDED');
    expect(await harness.eventTypes(first.id)).toEqual(['job.admitted', 'attempt.started', 'job.succeeded']);
    expect((await harness.jobRow(second.id)).status).toBe('RUNNING');
  });

  it("answers a refused call with the unary RPC's error, for that call alone", async () => {
    const queue = freshQueue('session-errors');
    const incarnation = await register('session-errors', queue);
    await harness.submit({ queue });
    const session = new RawSession(execution);
    const claimed = await session.call(1n, claim(incarnation, queue, 5_000));
    const assignment = claimed.result.case === 'claimJobs' ? claimed.result.value.assignments[0]! : undefined;
    const attempt = attemptOf(assignment!);

    const stale = await session.call(2n, { case: 'renewAttempt', value: { attempt: { ...attempt, fence: BigInt(attempt.fence!) + 1n }, operationId: newOperationId() } });
    expect(stale.result.case === 'error' && stale.result.value.code).toBe(Code.FailedPrecondition);
    expect(reasonOf(stale)).toBe('STALE_AUTHORITY');
    const bad = await session.call(3n, { case: 'appendEvents', value: { attempt, operationId: 'short', events: [] } });
    expect(bad.result.case === 'error' && bad.result.value.code).toBe(Code.InvalidArgument);
    expect(reasonOf(bad)).toBe('INVALID_FIELD');
    const nothing = await session.call(4n, { case: undefined });
    expect(reasonOf(nothing)).toBe('INVALID_FIELD');

    const renewed = await session.call(5n, { case: 'renewAttempt', value: { attempt, operationId: newOperationId() } });
    expect(renewed.result.case).toBe('renewAttempt');
    session.close();
    expect(await session.ended).toBe('ok');
  });

  it('withdraws a cancelled call: a waiting claim answers CANCELLED at once, and the session goes on', async () => {
    const queue = freshQueue('session-cancel');
    const incarnation = await register('session-cancel', queue);
    const session = new RawSession(execution);
    const started = Date.now();
    session.send(1n, claim(incarnation, queue, 30_000));
    session.send(1n, { case: 'cancel', value: {} });
    const cancelled = await session.answer(1n);
    expect(cancelled.result.case === 'error' && cancelled.result.value.code).toBe(Code.Canceled);
    expect(Date.now() - started).toBeLessThan(10_000);
    session.send(7n, { case: 'cancel', value: {} }); // no such call: ignored

    // A call's own deadline ends its wait too: an empty answer just before it, as ClaimJobs gives.
    const timed = await session.call(2n, claim(incarnation, queue, 30_000), 600);
    expect(timed.result.case === 'claimJobs' && timed.result.value.assignments).toEqual([]);
    session.close();
    expect(await session.ended).toBe('ok');
  });

  it('fails the stream INVALID_ARGUMENT on a call id of 0 or one still unanswered', async () => {
    const queue = freshQueue('session-ids');
    const incarnation = await register('session-ids', queue);
    const zero = new RawSession(execution);
    zero.send(0n, claim(incarnation, queue, 0));
    const zeroEnd = await zero.ended;
    expect(zeroEnd !== 'ok' && zeroEnd.code).toBe(Code.InvalidArgument);

    const twice = new RawSession(execution);
    twice.send(1n, claim(incarnation, queue, 5_000));
    twice.send(1n, claim(incarnation, queue, 5_000));
    const twiceEnd = await twice.ended;
    expect(twiceEnd !== 'ok' && twiceEnd.code).toBe(Code.InvalidArgument);
  });

  it('is refused to a user token (PERMISSION_DENIED) and without a token (UNAUTHENTICATED)', async () => {
    const asUser = new RawSession(clientFor(ExecutionService, harness.cluster.execution.url, harness.ownerToken));
    asUser.send(1n, claim('wkr_x', 'q', 0));
    const userEnd = await asUser.ended;
    expect(userEnd !== 'ok' && userEnd.code).toBe(Code.PermissionDenied);
    const anonymous = new RawSession(clientFor(ExecutionService, harness.cluster.execution.url));
    anonymous.send(1n, claim('wkr_x', 'q', 0));
    const anonymousEnd = await anonymous.ended;
    expect(anonymousEnd !== 'ok' && anonymousEnd.code).toBe(Code.Unauthenticated);
  });

  it("refuses a zombie session's reports once its lease has passed and another worker holds the job", async () => {
    const queue = freshQueue('session-zombie');
    const zombieIncarnation = await register('session-zombie-a', queue);
    const job = await harness.submit({ queue });
    const zombie = new RawSession(execution);
    const claimed = await zombie.call(1n, claim(zombieIncarnation, queue, 5_000));
    const zombieAttempt = attemptOf(claimed.result.case === 'claimJobs' ? claimed.result.value.assignments[0]! : (undefined as never));

    // The zombie stays connected but never renews: its lease passes, the reaper re-queues the job, another worker claims it.
    const otherIncarnation = await register('session-zombie-b', queue);
    const other = new RawSession(execution);
    const reclaimed = await other.call(1n, claim(otherIncarnation, queue, LEASE_MS * 10));
    const otherAssignment = reclaimed.result.case === 'claimJobs' ? reclaimed.result.value.assignments[0] : undefined;
    expect(otherAssignment?.envelope?.jobId).toBe(job.id);
    expect(BigInt(otherAssignment!.authority!.fence)).toBeGreaterThan(BigInt(zombieAttempt.fence!));

    const late = await zombie.call(2n, {
      case: 'reportOutcome',
      value: { attempt: zombieAttempt, operationId: newOperationId(), outcome: { case: 'success', value: { result: { zombie: true } } } },
    });
    expect(reasonOf(late)).toBe('STALE_AUTHORITY');
    const done = await other.call(2n, {
      case: 'reportOutcome',
      value: { attempt: attemptOf(otherAssignment!), operationId: newOperationId(), outcome: { case: 'success', value: { result: { zombie: false } } } },
    });
    expect(done.result.case).toBe('reportOutcome');
    zombie.close();
    other.close();
    expect((await harness.jobRow(job.id)).result).toEqual({ zombie: false });
  });
});

describe('the worker calls on every protocol of the execution port', () => {
  /*
   * Over binary gRPC the execution service passes the state service's
   * encoded answers on as they are (docs/architecture.md, "Jobs after
   * admission"); every other protocol gets them decoded. Each protocol's
   * claim, and its replay by operation id over the other path, must read
   * the same.
   */
  for (const protocol of ['connect', 'grpc-web'] as const satisfies readonly Protocol[]) {
    it(`answers ${protocol} as gRPC answers the same calls, unary and on a session`, async () => {
      const queue = freshQueue(`session-${protocol}`);
      const other = clientFor(ExecutionService, harness.cluster.replicas.execution[0]!.url, harness.workerToken, protocol);
      const { workerIncarnation } = await other.registerWorker({ workerName: `protocol-${protocol}`, queues: [queue], maxConcurrency: 4 });
      const first = await harness.submit({ queue, input: { n: 1, nested: { list: [1, 'two', true] } } });
      const claimOperation = newOperationId();
      const claimRequest = { workerIncarnation, maxJobs: 1, wait: durationFromMs(3_000), operationId: claimOperation };
      const claimed = await other.claimJobs(claimRequest);
      expect(claimed.assignments.map((assignment) => assignment.envelope?.jobId)).toEqual([first.id]);
      expect(claimed.assignments[0]?.envelope?.input).toEqual({ n: 1, nested: { list: [1, 'two', true] } });
      // The same claim replayed over gRPC: the stored answer, through the path that does not decode it.
      expect(await execution.claimJobs(claimRequest)).toEqual(claimed);
      const outcome = { attempt: attemptOf(claimed.assignments[0]!), operationId: newOperationId(), outcome: { case: 'success' as const, value: { result: { ok: protocol } } } };
      const reported = await other.reportOutcome(outcome);
      expect(reported.job?.status).toBe(await execution.reportOutcome(outcome).then((replayed) => replayed.job?.status));
      expect(reported.job?.id).toBe(first.id);

      if (protocol === 'grpc-web') return; // gRPC-Web carries no client stream: Work is gRPC and Connect only.
      const second = await harness.submit({ queue, input: { n: 2 } });
      const session = new RawSession(other);
      const pushed = await session.call(1n, claim(workerIncarnation, queue, 3_000));
      const assignment = pushed.result.case === 'claimJobs' ? pushed.result.value.assignments[0] : undefined;
      expect(assignment?.envelope?.jobId).toBe(second.id);
      const done = await session.call(2n, { case: 'reportOutcome', value: { attempt: attemptOf(assignment!), operationId: newOperationId(), outcome: { case: 'success', value: {} } } });
      expect(done.result.case === 'reportOutcome' && done.result.value.job?.id).toBe(second.id);
      session.close();
      expect(await session.ended).toBe('ok');
      expect((await harness.jobRow(second.id)).status).toBe('SUCCEEDED');
    });
  }
});

describe('the worker session with the reference gRPC implementation', () => {
  it('serves a @grpc/grpc-js bidirectional call: a job claimed, completed and answered by id, then OK after the half-close', async () => {
    const queue = freshQueue('session-grpc-js');
    const incarnation = await register('session-grpc-js', queue);
    const job = await harness.submit({ queue });
    const client = new grpc.Client(new URL(harness.cluster.execution.url).host, grpc.credentials.createInsecure());
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${harness.workerToken}`);
    const call = client.makeBidiStreamRequest(
      '/docket.execution.v1.ExecutionService/Work',
      (message: WorkRequest) => Buffer.from(toBinary(WorkRequestSchema, message)),
      (bytes: Buffer) => fromBinary(WorkResponseSchema, bytes),
      metadata,
    );
    const answers: WorkResponse[] = [];
    let next: ((answer: WorkResponse) => void) | undefined;
    call.on('data', (answer: WorkResponse) => (next ? next(answer) : answers.push(answer)));
    const ended = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    call.on('error', () => {}); // the status event carries the outcome
    const answer = (): Promise<WorkResponse> => (answers.length > 0 ? Promise.resolve(answers.shift()!) : new Promise((resolve) => (next = (a) => ((next = undefined), resolve(a)))));
    try {
      call.write(create(WorkRequestSchema, { callId: 5n, call: claim(incarnation, queue, 5_000) }));
      const claimed = await answer();
      expect(claimed.callId).toBe(5n);
      const assignment = claimed.result.case === 'claimJobs' ? claimed.result.value.assignments[0] : undefined;
      expect(assignment?.envelope?.jobId).toBe(job.id);
      const outcome = { attempt: attemptOf(assignment!), operationId: newOperationId(), outcome: { case: 'success' as const, value: { result: { via: 'grpc-js' } } } };
      call.write(create(WorkRequestSchema, { callId: 6n, call: { case: 'reportOutcome', value: outcome } }));
      const reported = await answer();
      expect([reported.callId, reported.result.case]).toEqual([6n, 'reportOutcome']);
      call.end();
      expect((await ended).code).toBe(grpc.status.OK);
    } finally {
      client.close();
    }
    expect((await harness.jobRow(job.id)).result).toEqual({ via: 'grpc-js' });
  });
});

describe('how a worker session ends', () => {
  it('at its longest age, and on drain: every call read is answered (a waiting claim at once, empty), then OK', async () => {
    const ending = await ExecutionHarness.start(startInProcessCluster, 'work-session-ends', {
      databaseUrl: await createMigratedTestDatabase('work session ends'),
      env: { execution: { DOCKET_WORK_SESSION_MAX_AGE_MS: '1500' } },
    });
    try {
      const client = clientFor(ExecutionService, ending.cluster.execution.url, ending.workerToken);
      const queue = freshQueue('session-ends');
      const incarnation = (await client.registerWorker({ workerName: 'session-ends', queues: [queue], maxConcurrency: 4 })).workerIncarnation;

      const aged = new RawSession(client);
      const opened = Date.now();
      aged.send(1n, claim(incarnation, queue, 30_000));
      const agedClaim = await aged.answer(1n);
      expect(agedClaim.result.case === 'claimJobs' && agedClaim.result.value.assignments).toEqual([]);
      expect(await aged.ended).toBe('ok');
      expect(Date.now() - opened).toBeGreaterThanOrEqual(1_400);
      expect(Date.now() - opened).toBeLessThan(10_000);

      const drained = new RawSession(client);
      drained.send(1n, claim(incarnation, queue, 30_000));
      await new Promise((resolve) => setTimeout(resolve, 200)); // Real time: the claim is read and waiting before the drain begins.
      const stopped = ending.cluster.replicas.execution[0]!.stop();
      const drainedClaim = await drained.answer(1n);
      expect(drainedClaim.result.case === 'claimJobs' && drainedClaim.result.value.assignments).toEqual([]);
      expect(await drained.ended).toBe('ok');
      await stopped;
    } finally {
      await ending.close();
    }
  });
});

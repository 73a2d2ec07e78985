import { create, toJson } from '@bufbuild/protobuf';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { WorkResponseSchema, type WorkRequest, type WorkResponse } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { createWorker, type Worker } from '@docket/worker-sdk';
import { startInProcessCluster } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { ExecutionHarness, freshQueue } from './support/raw-worker-harness.js';

/*
 * The worker SDK's promise for a call whose answer is lost (docs/errors.md
 * "Retrying safely"): it retries with the same operation id, and the
 * service answers the retry with the original response instead of acting
 * twice. Proven here against the real services: an interceptor on the
 * SDK's own transport lets the first SaveCheckpoint and the first
 * ReportOutcome reach the execution service, waits for the service's
 * answer (so the call has been applied and committed), and then throws it
 * away, handing the SDK an UNAVAILABLE as a broken connection would. On
 * the worker session (the SDK's default) the answer is lost with the whole
 * stream, which fails as a dropped connection does: the SDK sends the call
 * again, same operation id, on a new session.
 */

let harness: ExecutionHarness;
let worker: Worker | undefined;

beforeAll(async () => {
  harness = await ExecutionHarness.start(startInProcessCluster, 'lost-answer-owner', { databaseUrl: await createMigratedTestDatabase('worker sdk lost answer') });
});

afterAll(async () => {
  await worker?.stop();
  await harness?.close();
});

/** One call the SDK sent: its RPC, its operation id, and what the service answered (before any drop). */
interface SentCall {
  readonly rpc: string;
  readonly operationId: string;
  readonly answer: { readonly ok: true; readonly response: unknown } | { readonly ok: false; readonly code: Code };
  readonly dropped: boolean;
}

/** Records every call; drops the answer of the first call of each RPC in `dropFirst` after the service has given it. */
function losingFirstAnswers(dropFirst: ReadonlySet<string>, sent: SentCall[]): Interceptor {
  const dropped = new Set<string>();
  return (next) => async (request) => {
    const rpc = request.method.name;
    const operationId = (request.message as { operationId?: string }).operationId ?? '';
    try {
      const response = await next(request);
      const drop = dropFirst.has(rpc) && !dropped.has(rpc);
      const message = response.stream ? undefined : toJson(request.method.output, response.message);
      sent.push({ rpc, operationId, answer: { ok: true, response: message }, dropped: drop });
      if (drop) {
        dropped.add(rpc);
        throw new ConnectError('the answer was lost on the way back', Code.Unavailable);
      }
      return response;
    } catch (error) {
      if (error instanceof ConnectError && error.rawMessage === 'the answer was lost on the way back') throw error;
      sent.push({ rpc, operationId, answer: { ok: false, code: ConnectError.from(error).code }, dropped: false });
      throw error;
    }
  };
}

/** The unary RPC name of a session call (`saveCheckpoint` is `SaveCheckpoint`). */
function rpcOf(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

/**
 * {@link losingFirstAnswers} for the worker session: records every call
 * sent on a Work stream and its answer, and fails the stream in place of
 * the first successful answer of each RPC in `dropFirst` (after the service
 * has given it).
 */
function losingFirstSessionAnswers(dropFirst: ReadonlySet<string>, sent: SentCall[]): Interceptor {
  const dropped = new Set<string>();
  return (next) => async (request) => {
    if (request.method.name !== 'Work' || !request.stream) return next(request);
    const calls = new Map<bigint, { rpc: string; operationId: string }>();
    const requests = request.message as AsyncIterable<WorkRequest>;
    async function* recorded(): AsyncGenerator<WorkRequest> {
      for await (const message of requests) {
        const { call } = message;
        if (call.case !== undefined && call.case !== 'cancel') {
          calls.set(message.callId, { rpc: rpcOf(call.case), operationId: (call.value as { operationId?: string }).operationId ?? '' });
        }
        yield message;
      }
    }
    const response = await next({ ...request, message: recorded() });
    if (!response.stream) return response;
    const answers = response.message as AsyncIterable<WorkResponse>;
    async function* losing(): AsyncGenerator<WorkResponse> {
      for await (const answer of answers) {
        const call = calls.get(answer.callId);
        if (call) {
          const ok = answer.result.case !== 'error';
          const drop = ok && dropFirst.has(call.rpc) && !dropped.has(call.rpc);
          sent.push({
            ...call,
            answer: ok ? { ok: true, response: toJson(WorkResponseSchema, create(WorkResponseSchema, { result: answer.result })) } : { ok: false, code: (answer.result.value as { code: Code }).code },
            dropped: drop,
          });
          if (drop) {
            dropped.add(call.rpc);
            throw new ConnectError('the answer was lost on the way back', Code.Unavailable);
          }
        }
        yield answer;
      }
    }
    return { ...response, message: losing() };
  };
}

describe.each([
  { mode: 'unary calls', workSession: false, losing: losingFirstAnswers },
  { mode: 'the worker session', workSession: true, losing: losingFirstSessionAnswers },
])('a lost answer, against the real services, on $mode', ({ workSession, losing }) => {
  it('is retried with the same operation id: one checkpoint, one outcome, one journal event each', async () => {
    const queue = freshQueue('lost-answer');
    const sent: SentCall[] = [];
    const bearer: Interceptor = (next) => (request) => {
      request.header.set('authorization', `Bearer ${harness.workerToken}`);
      return next(request);
    };
    const transport = createGrpcTransport({
      baseUrl: harness.cluster.execution.url,
      interceptors: [bearer, losing(new Set(['SaveCheckpoint', 'ReportOutcome']), sent)],
    });
    worker = createWorker({
      transport,
      name: `lost-answer-${queue}`,
      queues: [queue],
      concurrency: 1,
      claimWaitMs: 2_000,
      workSession,
      handler: async (job) => {
        await job.saveCheckpoint({ step: 1 });
        return { done: true };
      },
    });
    await worker.start();
    const submitted = await harness.submit({ queue, input: { n: 1 } });
    const row = await harness.waitForStatus(submitted.id, 'SUCCEEDED', 20_000);
    await worker.stop();
    worker = undefined;

    for (const rpc of ['SaveCheckpoint', 'ReportOutcome']) {
      const tries = sent.filter((call) => call.rpc === rpc);
      expect(tries, `${rpc} was tried twice`).toHaveLength(2);
      const [first, retry] = tries as [SentCall, SentCall];
      expect(first.dropped).toBe(true);
      expect(first.answer.ok, `${rpc}'s first try was applied`).toBe(true);
      expect(retry.operationId, `${rpc} retried with the same operation id`).toBe(first.operationId);
      expect(retry.operationId).toMatch(/^op_/);
      // The retry is answered with the original response: a replay, not a second action (nor a refusal).
      expect(retry.answer).toEqual(first.answer);
    }

    expect(row).toMatchObject({ status: 'SUCCEEDED', result: { done: true }, checkpoint: { step: 1 } });
    expect((await harness.attempts(submitted.id)).map((attempt) => attempt.status)).toEqual(['SUCCEEDED']);
    expect(await harness.eventTypes(submitted.id)).toEqual(['job.admitted', 'attempt.started', 'checkpoint.saved', 'job.succeeded']);
    expect((await harness.admission.getJob({ jobId: submitted.id })).job?.status).toBe(JobStatus.SUCCEEDED);
  });
});

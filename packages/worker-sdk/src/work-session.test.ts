import { create } from '@bufbuild/protobuf';
import { anyPack, durationMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient, createRouterTransport, type ConnectRouter } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import {
  ExecutionService,
  type WorkRequest,
  type WorkResponse,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import { StatusSchema } from '@docket/proto/google/rpc/status_pb.js';
import { codeOf, reasonOf } from './docket-worker-error.js';
import { WorkSessionClient } from './work-session.js';

/*
 * The SDK's side of the worker session against scripted Work streams (the
 * real service's side is test/work-session.test.ts): what it does with an
 * answer, with a stream that ends in order or fails, with a service
 * without Work, and with a call's deadline.
 */

const ATTEMPT = { attemptId: 'att_1', fence: 1n, workerIncarnation: 'wkr_1' };

/** A session client over an in-memory ExecutionService with only `routes`. */
function sessionOver(routes: (router: ConnectRouter) => void): WorkSessionClient {
  return new WorkSessionClient(createClient(ExecutionService, createRouterTransport(routes)));
}

/** Work streams that each take the next script: it gets the stream's requests and yields its answers. */
function scriptedWork(
  scripts: ((requests: AsyncIterator<WorkRequest>) => AsyncGenerator<Partial<WorkResponse> & Pick<WorkResponse, 'callId' | 'result'>>)[],
): (router: ConnectRouter) => void {
  let next = 0;
  return (router) =>
    router.service(ExecutionService, {
      work: (requests) => {
        const script = scripts[next++];
        if (!script) throw new ConnectError('no more streams scripted', Code.Internal);
        return script(requests[Symbol.asyncIterator]());
      },
    });
}

async function read(requests: AsyncIterator<WorkRequest>): Promise<WorkRequest> {
  const next = await requests.next();
  if (next.done) throw new Error('the stream ended');
  return next.value;
}

describe('the worker session client', () => {
  it('answers each call with the response of its kind, whatever order the answers come in', async () => {
    const session = sessionOver(
      scriptedWork([
        async function* (requests) {
          const first = await read(requests);
          const second = await read(requests);
          yield { callId: second.callId, result: { case: 'reportProgress', value: { cancelRequested: true } } } as WorkResponse;
          yield { callId: first.callId, result: { case: 'renewAttempt', value: { pauseRequested: true } } } as WorkResponse;
          await requests.next();
        },
      ]),
    );
    const [renewed, progressed] = await Promise.all([
      session.client.renewAttempt({ attempt: ATTEMPT, operationId: 'op_renew000' }),
      session.client.reportProgress({ attempt: ATTEMPT, operationId: 'op_progress' }),
    ]);
    expect(renewed.pauseRequested).toBe(true);
    expect(progressed.cancelRequested).toBe(true);
    session.close();
  });

  it("rejects with the unary call's error, details and all, from an answer's google.rpc.Status", async () => {
    const session = sessionOver(
      scriptedWork([
        async function* (requests) {
          const call = await read(requests);
          const info = create(ErrorInfoSchema, { reason: 'STALE_AUTHORITY', domain: 'docket' });
          yield { callId: call.callId, result: { case: 'error', value: create(StatusSchema, { code: Code.FailedPrecondition, message: 'stale', details: [anyPack(ErrorInfoSchema, info)] }) } } as WorkResponse;
          await requests.next();
        },
      ]),
    );
    const failure = await session.client.reportOutcome({ attempt: ATTEMPT, operationId: 'op_outcome0' }).catch((error: unknown) => error);
    expect(codeOf(failure)).toBe(Code.FailedPrecondition);
    expect(reasonOf(failure)).toBe('STALE_AUTHORITY');
    session.close();
  });

  it('sends again, unchanged, on a new stream the calls a stream that ended in order never answered', async () => {
    const seen: WorkRequest[][] = [[], []];
    const session = sessionOver(
      scriptedWork([
        async function* (requests) {
          seen[0]!.push(await read(requests), await read(requests));
          yield { callId: seen[0]![0]!.callId, result: { case: 'renewAttempt', value: {} } } as WorkResponse;
          // Ends with OK, as on drain: the second call was read but is answered on the next stream.
        },
        async function* (requests) {
          const again = await read(requests);
          seen[1]!.push(again);
          yield { callId: again.callId, result: { case: 'saveCheckpoint', value: {} } } as WorkResponse;
          await requests.next();
        },
      ]),
    );
    const renewed = session.client.renewAttempt({ attempt: ATTEMPT, operationId: 'op_renew000' });
    const saved = session.client.saveCheckpoint({ attempt: ATTEMPT, operationId: 'op_checkpnt', checkpoint: { step: 2 } });
    await expect(renewed).resolves.toBeDefined();
    await expect(saved).resolves.toBeDefined();
    expect(seen[1]).toEqual([seen[0]![1]]);
    session.close();
  });

  it('fails what a broken stream left unanswered with UNAVAILABLE, and a refusal of the session with its own code', async () => {
    const session = sessionOver(
      scriptedWork([
        async function* (requests) {
          await read(requests);
          throw new ConnectError('stream reset', Code.Aborted); // what connect-node reports for a reset stream
        },
        async function* (requests) {
          await read(requests);
          throw new ConnectError('not a worker', Code.PermissionDenied);
        },
      ]),
    );
    const lost = await session.client.reportOutcome({ attempt: ATTEMPT, operationId: 'op_outcome0' }).catch((error: unknown) => error);
    expect(codeOf(lost)).toBe(Code.Unavailable);
    const refused = await session.client.reportOutcome({ attempt: ATTEMPT, operationId: 'op_outcome0' }).catch((error: unknown) => error);
    expect(codeOf(refused)).toBe(Code.PermissionDenied);
    session.close();
  });

  it("sends a call's timeout as its deadline, and withdraws it when that passes unanswered", async () => {
    const seen: WorkRequest[] = [];
    let bothRead: () => void = () => {};
    const read2 = new Promise<void>((resolve) => (bothRead = resolve));
    const session = sessionOver(
      scriptedWork([
        async function* (requests) {
          seen.push(await read(requests));
          seen.push(await read(requests));
          bothRead();
          await requests.next();
        },
      ]),
    );
    const failure = await session.client.claimJobs({ workerIncarnation: 'wkr_1', operationId: 'op_claim000' }, { timeoutMs: 150 }).catch((error: unknown) => error);
    expect(codeOf(failure)).toBe(Code.DeadlineExceeded);
    await read2;
    expect(durationMs(seen[0]!.timeout!)).toBe(150);
    expect(seen[1]).toMatchObject({ callId: seen[0]!.callId, call: { case: 'cancel' } });
    session.close();
  });

  it('goes unary against a service without Work, the call that found out included', async () => {
    let unary = 0;
    const session = sessionOver((router) =>
      router.service(ExecutionService, {
        renewAttempt: () => {
          unary++;
          return { pauseRequested: true };
        },
      }),
    );
    expect((await session.client.renewAttempt({ attempt: ATTEMPT, operationId: 'op_renew000' })).pauseRequested).toBe(true);
    expect((await session.client.renewAttempt({ attempt: ATTEMPT, operationId: 'op_renew001' })).pauseRequested).toBe(true);
    expect(unary).toBe(2);
    session.close();
  });
});

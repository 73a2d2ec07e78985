import type { ConnectRouter, HandlerContext } from '@connectrpc/connect';
import { ClaimJobsResponseSchema, ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { drainSignalOf, encodedAnswer, forwardDeadline, permissionDeniedError, principalOf, writesEncodedFrames } from '@docket/service-kit';
import { claimJobs } from '../domain/claim-jobs.js';
import { workSession, type WorkSessionDependencies } from '../domain/work-session.js';
import { callWorkerRpc, type WorkerCall, type WorkerCallName, type WorkerCallResponse } from '../domain/worker-call.js';

/** What the ExecutionService handlers need. */
export type ExecutionRoutesDependencies = WorkSessionDependencies;

/**
 * Registers docket.execution.v1.ExecutionService. Every worker RPC is
 * authorised and applied by the state service (HandleWorkerCall) for the
 * token's subject; ClaimJobs adds the long-poll. A worker token that grants
 * queues (claim `queues`) may register only those: any other queue is
 * PERMISSION_DENIED before anything is written, and since claims serve only
 * the registered queues, such a worker never sees another queue's jobs.
 * Work, the worker session, runs the same calls on one stream.
 */
export function executionServiceRoutes(deps: ExecutionRoutesDependencies): (router: ConnectRouter) => void {
  /** The handler of a worker RPC that the state service answers as is: its encoded answer passed on. */
  const forwarded =
    <C extends Exclude<WorkerCallName, 'claimJobs'>>(name: C) =>
    async (request: Extract<WorkerCall, { case: C }>['value'], ctx: HandlerContext): Promise<WorkerCallResponse<C>> => {
      const call = { case: name, value: request } as WorkerCall;
      const answer = await callWorkerRpc(deps.state, principalOf(ctx).subject, call, forwardDeadline(ctx));
      return encodedAnswer(ExecutionService.method[name].output, answer.encoded, ctx) as WorkerCallResponse<C>;
    };
  return (router) => {
    router.service(ExecutionService, {
      registerWorker: (request, ctx) => {
        const granted = principalOf(ctx).queues;
        if (granted !== undefined && !request.queues.every((queue) => granted.includes(queue))) throw permissionDeniedError();
        return forwarded('registerWorker')(request, ctx);
      },
      claimJobs: async (request, ctx) => {
        const claimed = await claimJobs(deps, principalOf(ctx).subject, request, {
          // Made when read: a claim that finds work at once never waits, and never reads them.
          get signal() {
            return ctx.signal;
          },
          get drain() {
            return drainSignalOf(ctx);
          },
          forward: () => forwardDeadline(ctx),
        });
        return encodedAnswer(ClaimJobsResponseSchema, claimed, ctx);
      },
      renewAttempt: forwarded('renewAttempt'),
      reportProgress: forwarded('reportProgress'),
      saveCheckpoint: forwarded('saveCheckpoint'),
      appendEvents: forwarded('appendEvents'),
      reportOutcome: forwarded('reportOutcome'),
      ackSignals: forwarded('ackSignals'),
      requestApproval: forwarded('requestApproval'),
      beginEffect: forwarded('beginEffect'),
      advanceEffect: forwarded('advanceEffect'),
      listRecoverableEffects: forwarded('listRecoverableEffects'),
      work: (requests, ctx) =>
        workSession(deps, principalOf(ctx).subject, requests, {
          signal: ctx.signal,
          drain: drainSignalOf(ctx),
          forward: () => forwardDeadline(ctx),
          encodedFrames: writesEncodedFrames(ctx),
        }),
    });
  };
}

import { Code, ConnectError, createClient, createRouterTransport } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { batchingStateClient } from './batching-state-client.js';

/*
 * The front services' state client, against an in-memory StateService
 * whose HandleWorkerCalls answers when the test lets it: a caller that
 * gives up stops waiting at once, and the answer its item gets later is
 * still taken (an untaken rejection would end the process).
 */

describe('batchingStateClient', () => {
  it('answers a caller that already gave up at once, and takes the late refusal of its item', async () => {
    let release!: () => void;
    const decided = new Promise<void>((resolve) => (release = resolve));
    const transport = createRouterTransport((router) =>
      router.service(StateService, {
        handleWorkerCalls: async (request) => {
          await decided;
          return { results: request.calls.map(() => ({ result: { case: 'error' as const, value: { code: Code.FailedPrecondition, message: 'refused' } } })) };
        },
      }),
    );
    const state = batchingStateClient(createClient(StateService, transport), { maxBatch: 8, maxInFlight: 1 });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const call = { subject: 'worker', request: { case: 'renewAttempt' as const, value: {} } };
      const first = state.handleWorkerCall(call); // the one batch in flight, held until release
      // Its caller has gone and its deadline passes while it waits: the batch later refuses it.
      const late = state.handleWorkerCall(call, { signal: AbortSignal.abort(), timeoutMs: 1 });
      await expect(late).rejects.toMatchObject({ code: Code.Canceled });
      release();
      await expect(first).rejects.toBeInstanceOf(ConnectError);
      await expect(first).rejects.toMatchObject({ code: Code.FailedPrecondition });
      // Real time: a turn for a rejection nobody took to be reported.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

import { Code, ConnectError, createClient, createRouterTransport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { describe, expect, it, vi } from 'vitest';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { batchingStateClient } from './batching-state-client.js';
import { forwardDeadline } from './deadline.js';
import { ProbeService } from './testing/probe-service.js';
import { startProbeServer } from './testing/probe-server.js';

/*
 * The front services' state client, against an in-memory StateService
 * whose HandleWorkerCalls answers when the test lets it: a caller that
 * gives up stops waiting at once, and the answer its item gets later is
 * still taken (an untaken rejection would end the process).
 */

/** A state client over an in-memory StateService whose HandleWorkerCalls waits for `decided`, refusing every call. */
function heldStateClient(decided: Promise<void>) {
  const transport = createRouterTransport((router) =>
    router.service(StateService, {
      handleWorkerCalls: async (request) => {
        await decided;
        return { results: request.calls.map(() => ({ result: { case: 'error' as const, value: { code: Code.FailedPrecondition, message: 'refused' } } })) };
      },
    }),
  );
  return batchingStateClient(transport, { maxBatch: 8, maxInFlight: 1 });
}

describe('batchingStateClient', () => {
  it("stops a served call's wait for its item when its client cancels, through forwardDeadline", async () => {
    let release!: () => void;
    const state = heldStateClient(new Promise<void>((resolve) => (release = resolve)));
    const ended: unknown[] = [];
    let waiting = false;
    const front = await startProbeServer({
      routes: (router) =>
        router.service(ProbeService, {
          echo: async (_request, ctx) => {
            const answer = state.handleWorkerCall({ subject: 'worker', request: { case: 'renewAttempt', value: {} } }, forwardDeadline(ctx));
            waiting = true;
            await answer.catch((error: unknown) => ended.push(ConnectError.from(error).code));
            return { text: 'done' };
          },
        }),
    });
    try {
      const probe = createClient(ProbeService, createGrpcTransport({ baseUrl: front.url }));
      const leaving = new AbortController();
      const call = probe.echo({ text: 'x' }, { headers: { authorization: `Bearer ${await front.token('user')}` }, signal: leaving.signal });
      // Real time: the call reaches the handler, which waits for its held batch.
      await vi.waitUntil(() => waiting, { timeout: 5_000, interval: 5 });
      leaving.abort();
      await expect(call).rejects.toMatchObject({ code: Code.Canceled });
      // The handler stopped waiting while the batch is still held.
      await vi.waitUntil(() => ended.length === 1, { timeout: 5_000, interval: 5 });
      expect(ended).toEqual([Code.Canceled]);
    } finally {
      release();
      await front.server.shutdown(500);
    }
  });

  it('answers a caller that already gave up at once, and takes the late refusal of its item', async () => {
    let release!: () => void;
    const state = heldStateClient(new Promise<void>((resolve) => (release = resolve)));
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

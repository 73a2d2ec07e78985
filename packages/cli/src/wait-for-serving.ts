import { createClient } from '@connectrpc/connect';
import { createServiceConnection } from '@docket/client-kit/node';
import { Health, HealthCheckResponse_ServingStatus } from '@docket/proto/grpc/health/v1/health_pb.js';

/** Options for {@link waitForServing}. */
export interface WaitForServingOptions {
  /** Give up after this long; default 30 s. */
  readonly timeoutMs?: number;
  /** Pause between checks; default 100 ms. */
  readonly intervalMs?: number;
  /** Stops waiting early (the promise then rejects with the signal's reason). */
  readonly signal?: AbortSignal;
}

/**
 * Polls `grpc.health.v1.Health/Check` (overall health, `service: ""`) over
 * gRPC on `baseUrl` until it answers SERVING, the way a Kubernetes gRPC
 * probe would. Rejects with the last status or error seen on timeout.
 */
export async function waitForServing(baseUrl: string, options: WaitForServingOptions = {}): Promise<void> {
  const client = createClient(Health, createServiceConnection({ baseUrl }).transport);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      const response = await client.check({ service: '' }, { timeoutMs: 2_000, signal: options.signal });
      if (response.status === HealthCheckResponse_ServingStatus.SERVING) return;
      last = `status ${HealthCheckResponse_ServingStatus[response.status] ?? response.status}`;
    } catch (error) {
      options.signal?.throwIfAborted();
      last = (error as Error).message;
    }
    if (Date.now() >= deadline) {
      throw new Error(`${baseUrl} did not report SERVING within ${timeoutMs} ms (last: ${last})`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100));
  }
}

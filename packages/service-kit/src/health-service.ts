import { create } from '@bufbuild/protobuf';
import { Code, type ConnectRouter } from '@connectrpc/connect';
import {
  Health,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as WireStatus,
  type HealthCheckResponse,
} from '@docket/proto/grpc/health/v1/health_pb.js';
import { docketConnectError } from './error-mapping.js';
import type { HealthRegistry, WatchedStatus } from './health-registry.js';
import { sharedFrame } from './shared-frame.js';

const WIRE_STATUS: Readonly<Record<WatchedStatus, WireStatus>> = {
  SERVING: WireStatus.SERVING,
  NOT_SERVING: WireStatus.NOT_SERVING,
  SERVICE_UNKNOWN: WireStatus.SERVICE_UNKNOWN,
};

/**
 * The one answer per status, made once and marked as sent unchanged on
 * every call (`sharedFrame`): a binary gRPC Check or Watch writes its frame
 * as encoded the first time, with no message made or encoded per call.
 */
const ANSWERS: Readonly<Record<WatchedStatus, HealthCheckResponse>> = {
  SERVING: sharedFrame(create(HealthCheckResponseSchema, { status: WireStatus.SERVING })),
  NOT_SERVING: sharedFrame(create(HealthCheckResponseSchema, { status: WireStatus.NOT_SERVING })),
  SERVICE_UNKNOWN: sharedFrame(create(HealthCheckResponseSchema, { status: WireStatus.SERVICE_UNKNOWN })),
};

/**
 * Serves `grpc.health.v1.Health` from `registry`, as the health proto
 * specifies: Check answers the current status or `NOT_FOUND` for an unknown
 * name; Watch sends the current status at once and again on every change
 * (SERVICE_UNKNOWN for an unknown name, without ending the call) and ends
 * after NOT_SERVING when the server shuts down; List snapshots every name.
 */
export function registerHealthService(router: ConnectRouter, registry: HealthRegistry): void {
  router.service(Health, {
    check(request) {
      const status = registry.status(request.service);
      if (status === undefined) {
        throw docketConnectError({ code: Code.NotFound, reason: 'NOT_FOUND', message: 'unknown service' });
      }
      return ANSWERS[status];
    },
    async *watch(request, ctx) {
      for await (const status of registry.watch(request.service, ctx.signal)) {
        yield ANSWERS[status];
      }
    },
    list() {
      return {
        statuses: Object.fromEntries(
          registry.entries().map(([service, status]) => [service, { status: WIRE_STATUS[status] }]),
        ),
      };
    },
  });
}

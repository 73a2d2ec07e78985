import type { ConnectRouter, HandlerContext } from '@connectrpc/connect';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { drainOf, forwardDeadline, principalOf, streamSinkOf, writesEncodedFrames } from '@docket/service-kit';
import { watchJobs } from '../domain/change-feed.js';
import type { EventDependencies, StreamSignals } from '../domain/event-dependencies.js';
import { streamJobEvents } from '../domain/job-event-tail.js';
import { readJobEvents } from '../domain/read-job-events.js';

/** Registers docket.events.v1.EventService. */
export function eventServiceRoutes(deps: EventDependencies): (router: ConnectRouter) => void {
  return (router) => {
    router.service(EventService, {
      readJobEvents: (request, ctx) => readJobEvents(deps, principalOf(ctx), request, forwardDeadline(ctx)),
      streamJobEvents: (request, ctx) =>
        streamJobEvents(deps, principalOf(ctx), request, streamSignalsOf(ctx), writesEncodedFrames(ctx)),
      watchJobs: (request, ctx) => watchJobs(deps, principalOf(ctx), request, streamSignalsOf(ctx), streamSinkOf(ctx)),
    });
  };
}

/** A stream's cancel signal and the server's drain (listened to directly: see `drainOf`). */
function streamSignalsOf(ctx: HandlerContext): StreamSignals {
  return { signal: ctx.signal, drain: drainOf(ctx) };
}

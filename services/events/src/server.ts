import { createClient } from '@connectrpc/connect';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import {
  FeedCursorCodec,
  createServiceTransport,
  serviceHealthProbe,
  startServer,
  type Logger,
  type RunningServer,
} from '@docket/service-kit';
import type { EventsConfig } from './config.js';
import { SubscriberGauge } from './domain/subscriber-gauge.js';
import { eventServiceRoutes } from './routes/event-service.js';

/** Starts the events service's server: EventService, health and reflection. */
export function startEventsServer(config: EventsConfig, logger: Logger): Promise<RunningServer> {
  const stateTransport = createServiceTransport({ baseUrl: config.stateUrl, token: config.serviceToken });
  const state = createClient(StateService, stateTransport);
  return startServer({
    name: 'events',
    listen: config.listen,
    services: [EventService],
    routes: eventServiceRoutes({
      state,
      cursors: new FeedCursorCodec(config.cursorSecret, config.feedCursorTtlMs),
      heartbeatMs: config.heartbeatMs,
      gauge: new SubscriberGauge(logger),
    }),
    authenticate: { secret: config.authSecret, allowedRoles: ['user', 'admin'] },
    logger,
    dependency: serviceHealthProbe('state', stateTransport),
  });
}

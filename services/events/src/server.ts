import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { startServer, type Logger, type RunningServer } from '@docket/service-kit';
import type { EventsConfig } from './config.js';

/**
 * Starts the events service's server: EventService, health and reflection. Its RPCs
 * are not built yet and answer UNIMPLEMENTED (with ErrorInfo) after
 * authentication.
 */
export function startEventsServer(config: EventsConfig, logger: Logger): Promise<RunningServer> {
  return startServer({
    name: 'events',
    listen: config.listen,
    services: [EventService],
    routes: (router) => {
      router.service(EventService, {});
    },
    authenticate: { secret: config.authSecret, allowedRoles: ['user', 'admin'] },
    logger,
  });
}

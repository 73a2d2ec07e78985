import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { startServer, type FrontServiceConfig, type Logger, type RunningServer } from '@docket/service-kit';

/** Default port of the events service (SPEC section 12). */
export const EVENTS_DEFAULT_PORT = 7403;

/**
 * Starts the events service's server: EventService, health and reflection. Its RPCs
 * are not built yet and answer UNIMPLEMENTED (with ErrorInfo) after
 * authentication.
 */
export function startEventsServer(config: FrontServiceConfig, logger: Logger): Promise<RunningServer> {
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

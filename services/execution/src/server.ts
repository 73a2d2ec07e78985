import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { startServer, type FrontServiceConfig, type Logger, type RunningServer } from '@docket/service-kit';

/** Default port of the execution service (SPEC section 12). */
export const EXECUTION_DEFAULT_PORT = 7402;

/**
 * Starts the execution service's server: ExecutionService, health and reflection. Its RPCs
 * are not built yet and answer UNIMPLEMENTED (with ErrorInfo) after
 * authentication.
 */
export function startExecutionServer(config: FrontServiceConfig, logger: Logger): Promise<RunningServer> {
  return startServer({
    name: 'execution',
    listen: config.listen,
    services: [ExecutionService],
    routes: (router) => {
      router.service(ExecutionService, {});
    },
    authenticate: { secret: config.authSecret, allowedRoles: ['worker'] },
    logger,
  });
}

import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { startServer, type Logger, type RunningServer } from '@docket/service-kit';
import type { ExecutionConfig } from './config.js';

/**
 * Starts the execution service's server: ExecutionService, health and reflection. Its RPCs
 * are not built yet and answer UNIMPLEMENTED (with ErrorInfo) after
 * authentication.
 */
export function startExecutionServer(config: ExecutionConfig, logger: Logger): Promise<RunningServer> {
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

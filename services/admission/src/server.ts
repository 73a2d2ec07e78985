import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { FeedCursorCodec, batchingStateClient, startFrontServer, stateTransportOf, type Logger, type RunningServer } from '@docket/service-kit';
import type { AdmissionConfig } from './config.js';
import { PageTokenCodec } from './domain/page-token.js';
import { admissionServiceRoutes } from './routes/admission-service.js';

/** Starts the admission service's server: AdmissionService, health, reflection. */
export function startAdmissionServer(config: AdmissionConfig, logger: Logger): Promise<RunningServer> {
  const stateTransport = stateTransportOf(config, 'admission');
  const state = batchingStateClient(stateTransport, config.stateBatch);
  return startFrontServer(config, {
    name: 'admission',
    services: [AdmissionService],
    routes: admissionServiceRoutes({
      state,
      pageTokens: new PageTokenCodec(config.cursorSecret, config.pageTokenTtlMs),
      feedCursors: new FeedCursorCodec(config.cursorSecret, config.feedCursorTtlMs),
      idempotencyTtlMs: config.idempotencyTtlMs,
      logger,
    }),
    allowedRoles: ['user', 'admin'],
    stateTransport,
    logger,
  });
}

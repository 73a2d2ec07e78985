import { serviceTokenSource } from '@docket/auth';
import { createClient } from '@connectrpc/connect';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import {
  FeedCursorCodec,
  batchingStateClient,
  createServiceTransport,
  serviceHealthProbe,
  startServer,
  type Logger,
  type RunningServer,
} from '@docket/service-kit';
import type { AdmissionConfig } from './config.js';
import { PageTokenCodec } from './domain/page-token.js';
import { admissionServiceRoutes } from './routes/admission-service.js';

/** Starts the admission service's server: AdmissionService, health, reflection. */
export function startAdmissionServer(config: AdmissionConfig, logger: Logger): Promise<RunningServer> {
  const stateTransport = createServiceTransport({ baseUrl: config.stateUrl, token: serviceTokenSource(config.serviceAuthSecret, 'admission', { ttlSeconds: config.serviceTokenTtlSeconds }), defaultDeadlineMs: config.stateCallTimeoutMs });
  const state = batchingStateClient(createClient(StateService, stateTransport), config.stateBatch);
  return startServer({
    name: 'admission',
    corsOrigins: config.corsOrigins,
    requestBytes: 'admissionRequestBytes',
    listen: config.listen,
    services: [AdmissionService],
    routes: admissionServiceRoutes({
      state,
      pageTokens: new PageTokenCodec(config.cursorSecret, config.pageTokenTtlMs),
      feedCursors: new FeedCursorCodec(config.cursorSecret),
      idempotencyTtlMs: config.idempotencyTtlMs,
      logger,
    }),
    authenticate: { secret: config.authSecret, publicKeys: config.authPublicKeys, rules: config.tokenRules, allowedRoles: ['user', 'admin'] },
    logger,
    dependency: serviceHealthProbe('state', stateTransport),
  });
}

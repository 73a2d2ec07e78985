import { runService } from '@docket/service-kit';
import { startStateService } from './state-service.js';

runService('state', (logger) => startStateService(process.env, logger));
